"""Vultr: the keyless plan lists (`GET /v2/plans?type=all` and `GET /v2/plans-metal`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Both lists answer without a key (gpuhunt's `providers/vultr.py` reads them anonymously; a key
  only adds per-account availability, which we do not read). Two requests make one collection:
  `fetch` joins the two answers, unchanged, as `{"plans": <answer>, "plans-metal": <answer>}`
  (the shape a recording keeps; a replayed recording, served to the first request, already
  holds both and is returned as it is).
- `/v2/plans` lists every virtual plan; GPU plans are `type` `vcg` (cloud GPU, with `gpu_type`
  `NVIDIA_A100` and `gpu_vram_gb`, the plan's total VRAM) and `vdm` (dedicated GPU VMs, which
  may omit the GPU fields: the id carries them, `vcg-a40-24c-120g-48vram`). Other types
  (`vc2`, `vhf`, `voc`, ...) are CPU plans, no offer. `/v2/plans-metal` lists bare-metal plans
  (`vbm-256c-2048gb-8-mi300x-gpu`: 8 GPUs); a metal plan without `gpu` in its id is a CPU box.
- Fractional GPUs: a `vcg` plan whose VRAM is less than one whole card's (`vcg-a100-1c-6g-4vram`:
  4 GB of an 80 GB A100, a vGPU share) is a reject saying so, never a whole GPU at a slice's
  price; a VRAM that is not a whole number of cards is a reject too. The whole-card VRAM per
  model is `WHOLE_VRAM_GB` (gpuhunt's figures; Vultr's A100 plans are the 80 GB part).
- `hourly_cost` is USD per plan-hour (per instance; per GPU derived). `location_cost` may
  override both prices for one region. `deploy_ondemand: false` means the plan cannot be bought
  on demand (no on-demand offer; gpuhunt drops such plans); `deploy_preemptible: true` with
  `hourly_cost_preemptible` is a preemptible (spot) offer, kept apart. A missing
  `deploy_ondemand` is read as on-demand (older answers omit both flags).
- `locations` are the regions where the plan can be deployed now (Vultr API docs: "regions where
  this plan is valid for use"): one available offer each, placed by `data/vultr_regions.csv`. A
  plan with no location is one offer without a region, not available. Empty strings among the
  locations are skipped (gpuhunt saw them).
- `ram` is MB (÷ 1024 → GB); `disk` is GB per disk, times `disk_count` on bare metal; vCPUs are
  `vcpu_count`, on bare metal `cpu_threads` (else `cpu_count`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import number, offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_list_member

NAME = "vultr"
ENV_KEY = None
KEY_REQUIRED = False  # the plan lists answer without a key (gpuhunt reads them anonymously)
URL = "https://api.vultr.com/v2/plans?type=all&per_page=500"
METAL_URL = "https://api.vultr.com/v2/plans-metal?per_page=500"
INTERVAL = timedelta(hours=1)  # plan lists and their deployable regions change within a day
CURRENCY = "USD"
MB_PER_GB = 1024  # `ram` is MB (gpuhunt: ram / 1024)

GPU_PLAN_TYPES = frozenset({"vcg", "vdm"})
"""Virtual plan types that carry GPUs; every other type is a CPU plan."""
WHOLE_VRAM_GB = {
    "A16": 16, "A40": 48, "A100": 80, "L40S": 48, "L40": 48, "H100": 80, "H200": 141,
    "GH200": 96, "B200": 192, "B300": 288, "MI300X": 192, "MI325X": 256, "MI355X": 288,
}  # fmt: skip
"""VRAM of one whole card per model, to tell a whole GPU from a vGPU share (gpuhunt's
`BARE_METAL_GPU_DETAILS` and `get_gpu_memory`: Vultr's A100 plans are the 80 GB part)."""
METAL_ID = re.compile(r"-(?:(?P<count>\d+)-)?(?P<model>[a-z0-9]+)-gpu$")
"""A bare-metal GPU plan id's tail: `-8-mi300x-gpu` (count 8), `-gh200-gpu` (count 1)."""
METAL_MODELS = {"l40": "L40S"}
"""Bare-metal id spellings that name another board: `vbm-64c-2048gb-8-l40-gpu` is 8× L40S
(gpuhunt's `BARE_METAL_GPU_DETAILS`; the answer's own `gpu_type` says `NVIDIA_L40S`)."""
VM_ID = re.compile(r"^vcg-(?P<model>[a-z0-9]+)-.*-(?P<vram>\d+)vram$")
"""A GPU VM plan id: `vcg-a40-24c-120g-48vram` (A40, 48 GB of VRAM in all)."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    plans = _get(client, URL)
    if JOINED_KEY in plans:
        return plans  # a recording replayed: both lists, joined as below
    return joined(plans, _get(client, METAL_URL))


JOINED_KEY = b'"plans-metal"'
"""The key under which a joined body holds the bare-metal answer (no plan list names it)."""


def joined(plans: bytes, metal: bytes) -> bytes:
    """The two answers as one body, each unchanged (bytes only; `parse` judges them)."""
    return b'{"plans":' + plans + b"," + JOINED_KEY + b":" + metal + b"}"


def _get(client: httpx.Client, url: str) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        url,
        provider=NAME,
        headers={"Accept": "application/json"},
        auth_hint="the plan list refused a request without a key; it may need one now",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(
            f"{NAME}: body is not JSON with the plans and plans-metal answers ({exc})"
        ) from exc
    if not isinstance(body, dict) or "plans" not in body or "plans-metal" not in body:
        raise ProviderPayloadError(
            f"{NAME}: body is not the joined plans and plans-metal answers; the answer changed "
            "shape, update scrapers/vultr.py"
        )
    plans = json_list_member(body["plans"], "plans", NAME, "/v2/plans")
    metal = json_list_member(body["plans-metal"], "plans_metal", NAME, "/v2/plans-metal")
    records = [*((False, plan) for plan in plans), *((True, plan) for plan in metal)]
    return offers_of_records(
        NAME,
        observed_at,
        records,
        lambda record: _offers_of(*record),
        id_of=lambda record: record[1].get("id") if isinstance(record[1], dict) else None,
    )


def _model(gpu_type: str) -> str:
    """`NVIDIA_A100_SXM` → `A100 SXM`, `AMD_MI300X` → `MI300X`."""
    name = gpu_type.strip()
    for vendor in ("NVIDIA_", "AMD_", "INTEL_"):
        if name.upper().startswith(vendor):
            name = name[len(vendor) :]
    return name.replace("_", " ").strip()


def _whole_cards(model: str, vram_gb: float, plan_id: str) -> int:
    """How many whole cards `vram_gb` of `model` is; a vGPU share or an odd total raises."""
    whole = WHOLE_VRAM_GB.get(model.split(" ")[0].upper())
    if whole is None:
        raise ValueError(f"GPU model {model!r} has no known whole-card VRAM; cannot count GPUs")
    if vram_gb < whole:
        raise ValueError(
            f"fractional GPU: {plan_id} has {vram_gb:g} GB of one {whole} GB {model} (a vGPU "
            f"share of {vram_gb / whole:.3g} of a card), not a whole GPU; not priced as one"
        )
    if vram_gb % whole:
        raise ValueError(
            f"gpu_vram_gb {vram_gb:g} is not a whole number of {whole} GB {model} cards"
        )
    return int(vram_gb // whole)


def _vm_gpus(plan: dict[str, Any]) -> tuple[str, int, float]:
    """(GPU model, count, total VRAM GB) of a GPU VM plan."""
    plan_id = plan["id"]
    gpu_type, vram = plan.get("gpu_type"), number("gpu_vram_gb", plan.get("gpu_vram_gb"))
    matched = VM_ID.match(plan_id) if isinstance(plan_id, str) else None
    if isinstance(gpu_type, str) and gpu_type.strip():
        model = _model(gpu_type)
    elif matched:
        model = matched["model"].upper()
    else:
        raise ValueError(f"GPU plan {plan_id!r} names no GPU (no gpu_type, id not vcg-<gpu>-...)")
    if vram is None and matched:
        vram = float(matched["vram"])
    if vram is None:
        raise ValueError(f"GPU plan {plan_id!r} states no VRAM (gpu_vram_gb)")
    return model, _whole_cards(model, vram, plan_id), vram


def _metal_gpus(plan: dict[str, Any]) -> tuple[str, int, float] | None:
    """(GPU model, count, total VRAM GB) of a bare-metal GPU plan; None for a CPU box."""
    plan_id = plan["id"]
    matched = METAL_ID.search(plan_id) if isinstance(plan_id, str) else None
    if matched is None:
        return None
    gpu_type = plan.get("gpu_type")
    id_model = matched["model"]
    model = (
        _model(gpu_type)
        if isinstance(gpu_type, str) and gpu_type.strip()
        else METAL_MODELS.get(id_model, id_model.upper())
    )
    count = plan.get("gpu_count", int(matched["count"] or 1))
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"gpu_count is not a whole number of GPUs: {count!r}")
    vram = number("gpu_vram_gb", plan.get("gpu_vram_gb"))
    if vram is None:
        whole = WHOLE_VRAM_GB.get(model.split(" ")[0].upper())
        vram = None if whole is None else float(whole * count)
    return model, count, vram if vram is not None else 0.0


def _locations(plan: dict[str, Any]) -> Iterator[str]:
    locations = plan.get("locations") or []
    if not isinstance(locations, list):
        raise TypeError(f"locations is not a list: {locations!r}")
    for location in locations:
        if isinstance(location, str) and location.strip():
            yield location.strip()


def _prices(plan: dict[str, Any], region: str | None) -> list[tuple[Pricing, float | None]]:
    """The plan's (pricing, USD per plan-hour) in `region`: `location_cost` overrides."""
    cost = plan
    override = (plan.get("location_cost") or {}).get(region) if region else None
    if isinstance(override, dict):
        cost = {**plan, **override}
    prices: list[tuple[Pricing, float | None]] = []
    if plan.get("deploy_ondemand", True) is not False:
        prices.append((Pricing.ON_DEMAND, number("hourly_cost", cost["hourly_cost"])))
    if plan.get("deploy_preemptible") is True:
        spot = number("hourly_cost_preemptible", cost.get("hourly_cost_preemptible"))
        if spot is None:
            raise ValueError("deploy_preemptible is true but hourly_cost_preemptible is missing")
        prices.append((Pricing.SPOT, spot))
    return prices


def _offers_of(metal: bool, plan: Any) -> list[dict[str, Any]]:
    if not isinstance(plan, dict):
        raise TypeError(f"a plan is not an object: {plan!r}")
    if metal:
        gpus = _metal_gpus(plan)
    else:
        gpus = _vm_gpus(plan) if plan.get("type") in GPU_PLAN_TYPES else None
    if gpus is None:
        return []  # a CPU plan
    model, count, vram = gpus
    ram = number("ram", plan.get("ram"))
    disk = number("disk", plan.get("disk"))
    disk_count = plan.get("disk_count")
    disks = disk_count if metal and isinstance(disk_count, int) else 1
    vcpus = plan.get("cpu_threads", plan.get("cpu_count")) if metal else plan.get("vcpu_count")
    common = {
        "gpu_raw": model,
        "gpu_count": count,
        "vram_gb": round(vram / count, 2) if vram else None,
        "vcpus": number("vcpus", vcpus),
        "ram_gb": None if ram is None else round(ram / MB_PER_GB, 2),
        "disk_gb": None if disk is None else disk * disks,
        "tier": "bare metal" if metal else plan.get("type"),
    }
    regions: list[str | None] = list(_locations(plan)) or [None]
    offers = []
    for region in regions:
        for pricing, price in _prices(plan, region):
            offers.append({
                **common,
                "offer_id": plan["id"] if region is None else f"{plan['id']}@{region}",
                "pricing": pricing,
                "price_per_hour": price,
                "region": region,
                "available": region is not None,
            })  # fmt: skip
    if not offers:
        raise ValueError("the plan can be deployed neither on demand nor preemptible")
    return offers
