"""Seeweb: the Cloud Server plans (`GET /ecs/v2/plans`) and what can be created now
(`GET /ecs/v2/plans/availables`), key required.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The key is the buyer's Seeweb API token, read from `SEEWEB_TOKEN` (the variable Seeweb's own
  Terraform provider reads, Seeweb/terraform-provider-seeweb `seeweb/provider.go`), sent in the
  `X-APITOKEN` header (gpuhunt's `providers/seeweb.py`, dstack's Seeweb client).
- **`available` in `/plans` means the plan is active, not that it has capacity**, and
  `available_regions` are the regions where the plan exists (gpuhunt: "not a real-time capacity
  signal"). What can be created now is `/plans/availables`: a plan/region pair is creatable only
  when the plan is listed there with the region in `region_availables` (dstack's Seeweb client:
  "i.e. has capacity"). Two requests make one collection: `fetch` joins the answers, unchanged,
  as `{"plans": <answer>, "plans-availables": <answer>}`; a replayed recording already holds
  both. An offer is available when its pair is creatable; an inactive plan's are not.
- `hourly_price` is **euros** per plan-hour ("Hourly price in Euro", the Terraform provider's
  `docs/data-sources/plans.md`): `CURRENCY = "EUR"`, per instance; the pipeline converts with the
  ECB rate. No spot.
- `cpu`, `ram` (MB, ÷ 1024 → GB), `disk` (GB, as gpuhunt reads it) and `gpu` (the count) are
  digit strings. `gpu_label` names the GPU with its memory per card (`L40s 48GB`, `H200 141GB`)
  or without (`A30`, `MI300X`: the catalog's size then). A plan with no GPU is a CPU plan, no
  offer. Tenstorrent Grayskull cards (`Tenstorrent Grayskull e150`) are AI accelerators, not
  GPUs: no offer (both peers skip them); MI300X is kept (both peers skip it for their
  NVIDIA-only scope).
- Regions are `it-fr2` (Frosinone) and `it-mi2` (Milan), placed in Italy by
  `data/seeweb_regions.csv`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import decimal, id_field, offers_of_records, whole
from scrapers.errors import MissingCredentialsError, ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_list_member

NAME = "seeweb"
ENV_KEY = "SEEWEB_TOKEN"  # Seeweb's own variable (its Terraform provider)
KEY_REQUIRED = True  # every ECS API call needs X-APITOKEN
URL = "https://api.seeweb.it/ecs/v2/plans"
AVAILABLES_URL = "https://api.seeweb.it/ecs/v2/plans/availables"
INTERVAL = timedelta(minutes=30)  # what can be created moves within hours
CURRENCY = "EUR"  # "Hourly price in Euro" (Seeweb's Terraform provider docs)
MB_PER_GB = 1024  # `ram` is MB (gpuhunt: ram / 1024)
AVAILABLES_KEY = "plans-availables"
"""Where the joined body keeps the `/plans/availables` answer."""
NOT_GPUS = ("TENSTORRENT", "GRAYSKULL", "WORMHOLE")
"""`gpu_label` words of accelerator cards that are not GPUs (gpuhunt's `_NON_NVIDIA_MARKERS`)."""
_LABEL_VRAM_GB = re.compile(r"(\d+(?:\.\d+)?)\s*GB\b", re.IGNORECASE)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    if creds is None:
        raise MissingCredentialsError(f"{ENV_KEY} is not set: export it to collect {NAME}")
    plans = _get(client, URL, creds)
    if b'"' + AVAILABLES_KEY.encode() + b'"' in plans:
        return plans  # a recording replayed: both answers, joined as below (no /plans names it)
    availables = _get(client, AVAILABLES_URL, creds)
    return b'{"plans":' + plans + b',"' + AVAILABLES_KEY.encode() + b'":' + availables + b"}"


def _get(client: httpx.Client, url: str, creds: Credentials) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        url,
        provider=NAME,
        headers={"Accept": "application/json", "X-APITOKEN": creds.api_key},
        auth_hint=f"check {ENV_KEY} (a Seeweb API token)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(
            f"{NAME}: body is not JSON with the plans and plans/availables answers ({exc})"
        ) from exc
    if not isinstance(body, dict) or "plans" not in body or AVAILABLES_KEY not in body:
        raise ProviderPayloadError(
            f"{NAME}: body is not the joined /plans and /plans/availables answers; the answer "
            "changed shape, update scrapers/seeweb.py"
        )
    plans = json_list_member(body["plans"], "plans", NAME, "/plans")
    availables = json_list_member(body[AVAILABLES_KEY], "plans", NAME, "/plans/availables")
    creatable = _creatable(availables)
    return offers_of_records(
        NAME, observed_at, plans, lambda plan: _offers_of(plan, creatable), id_of=id_field("name")
    )


def _creatable(availables: list[Any]) -> set[tuple[str, str]]:
    """The (plan, region) pairs `/plans/availables` says can be created now."""
    pairs = set()
    for plan in availables:
        if not isinstance(plan, dict) or not isinstance(plan.get("name"), str):
            continue
        regions = plan.get("region_availables") or plan.get("region_available") or []
        for region in regions if isinstance(regions, list) else []:
            if isinstance(region, dict) and isinstance(region.get("region"), str):
                pairs.add((plan["name"], region["region"]))
    return pairs


def _text(plan: dict[str, Any], key: str) -> str:
    value = plan[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is not a non-empty string: {value!r}")
    return value.strip()


def _regions(plan: dict[str, Any]) -> list[str]:
    regions = plan.get("available_regions") or []
    if not isinstance(regions, list):
        raise TypeError(f"available_regions is not a list: {regions!r}")
    names = [region["location"] for region in regions]
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise ValueError(f"available_regions has a location that is not a name: {names!r}")
    return list(dict.fromkeys(name.strip() for name in names))


def _offers_of(plan: Any, creatable: set[tuple[str, str]]) -> list[dict[str, Any]]:
    if not isinstance(plan, dict):
        raise TypeError(f"a plan is not an object: {plan!r}")
    name = _text(plan, "name")
    label, gpus = plan.get("gpu_label"), whole("gpu", plan.get("gpu") or 0)
    if not label or gpus == 0 or any(word in str(label).upper() for word in NOT_GPUS):
        return []  # a CPU plan, or an accelerator that is not a GPU
    active = plan.get("available")
    if not isinstance(active, bool):
        raise TypeError(f"available is not true/false: {active!r}")
    label = _text(plan, "gpu_label")
    vram = _LABEL_VRAM_GB.search(label)
    common = {
        "gpu_raw": label,
        "vram_gb": float(vram[1]) if vram else None,
        "gpu_count": gpus,
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": decimal("hourly_price", plan["hourly_price"]),
        "currency": CURRENCY,
        "vcpus": float(whole("cpu", plan["cpu"])),
        "ram_gb": whole("ram", plan["ram"]) / MB_PER_GB,
        "disk_gb": float(whole("disk", plan["disk"])),
    }
    regions = _regions(plan)
    if not regions:
        return [{**common, "offer_id": name, "region": None, "available": False}]
    return [
        {**common, "offer_id": f"{name}@{region}", "region": region,
         "available": active and (name, region) in creatable}
        for region in regions
    ]  # fmt: skip
