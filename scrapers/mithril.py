"""Mithril (ex-Foundry): the instance types, each type's current prices, spot availability.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Every endpoint needs a key: `Authorization: Bearer fkey_...` (`MITHRIL_API_KEY`, the variable
  SkyPilot's `fetch_mithril.py` reads). Without it the module is *not configured*, never degraded.
- One collection is `GET /v2/instance-types`, then `GET /v2/pricing/current?instance_type=<fid>`
  per type, then `GET /v2/spot/availability`, returned as one body `{"instance_types": [...],
  "pricing": {fid: answer}, "spot_availability": [...]}` (the shape of the recording); any failed
  request fails the run. A replay answers every request with one recorded body: `fetch` returns
  it as it is.
- Mithril sells spot by auction. `minimum_price_cents` is the **bid floor** (the least an
  auction accepts), not a price anyone pays on demand: SkyPilot published it as the on-demand
  price until its PR #9156, which names `reserved_price_cents` as the real on-demand price. We
  publish `reserved_price_cents` as on-demand and never read the floor.
- Prices are US **cents** per instance-hour (`*_price_cents`, integers) and a dollar string
  (`last_instance_price: "$2.40"`) in spot availability; both priced per instance (a node of
  `num_gpus` GPUs, as SkyPilot's catalog prices it), the per-GPU price derived.
- On-demand: one offer per type, unlocated (the type-wide answer), available while
  `available_capacity` is above zero; a null `reserved_price_cents` is no on-demand offer, a
  pricing answer without that field is a reject. Spot: one offer per (type, region) of spot
  availability at its `last_instance_price`, available while its `capacity` is above zero.
- The GPU is `gpu_type` and `gpu_socket` (`H100` `SXM5` → `H100 SXM5`, form factor SXM);
  `gpu_memory_gb` is per GPU, `ram_gb` and `local_storage_gb` GB, `num_cpus` vCPUs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_with_key, is_replay
from scrapers.batch import decimal, id_field, offers_of_records, whole
from scrapers.errors import ProviderPayloadError
from scrapers.models import FormFactor, ParseResult, Pricing

NAME = "mithril"
ENV_KEY = "MITHRIL_API_KEY"
KEY_REQUIRED = True  # every endpoint, prices included, needs a key
API = "https://api.mithril.ai/v2"
URL = f"{API}/instance-types"
PRICING_URL = f"{API}/pricing/current"
SPOT_URL = f"{API}/spot/availability"
INTERVAL = timedelta(minutes=15)  # auction prices and capacity move within the hour
CURRENCY = "USD"
CENTS_PER_DOLLAR = 100
ON_DEMAND_FIELD = "reserved_price_cents"
"""The on-demand price (PR #9156 of SkyPilot); `minimum_price_cents` is the bid floor."""
BODY_KEYS = ("instance_types", "pricing", "spot_availability")
_SOCKETS = {"SXM": FormFactor.SXM, "PCIE": FormFactor.PCIE, "NVL": FormFactor.NVL}


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    types_body = _get(client, URL, creds)  # without a key: not configured, nothing sent
    if is_replay(client):
        return types_body  # one recorded answer (the whole collection): `parse` reads it
    types = _json_list(types_body, "instance types")
    pricing = {}
    for record in types:
        fid = record.get("fid") if isinstance(record, dict) else None
        if isinstance(fid, str) and fid:
            answer = _get(client, str(httpx.URL(PRICING_URL, params={"instance_type": fid})), creds)
            pricing[fid] = _json_of(answer, f"pricing of {fid}")
    spot = _json_list(_get(client, SPOT_URL, creds), "spot availability")
    return orjson.dumps({"instance_types": types, "pricing": pricing, "spot_availability": spot})


def _get(client: httpx.Client, url: str, creds: Credentials | None) -> bytes:
    return fetch_with_key(
        client,
        url,
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        auth_hint=f"check {ENV_KEY} (Mithril needs a key even for prices)",
    )


def _json_of(payload: bytes, what: str) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: the {what} answer is not JSON ({exc})") from exc


def _json_list(payload: bytes, what: str) -> list[Any]:
    body = _json_of(payload, what)
    if not isinstance(body, list):
        raise ProviderPayloadError(f"{NAME}: the {what} answer is not a list")
    return body


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = _json_of(payload, "collection")
    if not isinstance(body, dict) or not all(key in body for key in BODY_KEYS):
        raise ProviderPayloadError(
            f"{NAME}: body is not one collection with {', '.join(map(repr, BODY_KEYS))}"
        )
    types, pricing, spot = (body[key] for key in BODY_KEYS)
    if not isinstance(types, list) or not isinstance(pricing, dict) or not isinstance(spot, list):
        raise ProviderPayloadError(
            f"{NAME}: instance_types and spot_availability must be lists, pricing an object"
        )
    spot_by_type: dict[str, list[Any]] = {}
    for entry in spot:
        type_fid = entry.get("instance_type") if isinstance(entry, dict) else None
        if not isinstance(type_fid, str):
            raise ProviderPayloadError(
                f"{NAME}: a spot availability entry names no instance_type: {str(entry)[:80]}"
            )
        spot_by_type.setdefault(type_fid, []).append(entry)
    return offers_of_records(
        NAME,
        observed_at,
        types,
        lambda t: _offers_of(t, pricing.get(t["fid"]), spot_by_type.get(t["fid"], [])),
        id_of=id_field("fid"),
    )


def _instance(record: dict[str, Any]) -> dict[str, Any]:
    """What every offer of one instance type shares."""
    gpu_count = whole("num_gpus", record["num_gpus"])
    gpu_type = record["gpu_type"]
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        raise ValueError(f"gpu_type must name a GPU, got {gpu_type!r}")
    socket = record.get("gpu_socket")
    socket = socket.strip() if isinstance(socket, str) else ""
    form_factor = next((f for key, f in _SOCKETS.items() if socket.upper().startswith(key)), None)
    return {
        "gpu_raw": f"{gpu_type.strip()} {socket}".strip(),
        "form_factor": form_factor,
        "gpu_count": gpu_count,
        "vram_gb": record.get("gpu_memory_gb"),
        "vcpus": record.get("num_cpus"),
        "ram_gb": record.get("ram_gb"),
        "disk_gb": record.get("local_storage_gb"),
        "tier": record.get("name"),
    }


def _capacity(name: str, value: object) -> bool:
    """Whether a capacity count says an instance can be had now (null: none stated, so not)."""
    return value is not None and whole(name, value) > 0


def _offers_of(record: dict[str, Any], pricing: object, spot: list[Any]) -> list[dict[str, Any]]:
    if record.get("num_gpus") == 0:
        return []  # a CPU type is no GPU offer (SkyPilot lists it without a GPU)
    common = _instance(record)
    fid = record["fid"]
    offers: list[dict[str, Any]] = []
    if pricing is not None:
        if not isinstance(pricing, dict):
            raise TypeError(f"pricing of {fid} is not an object: {pricing!r}")
        if ON_DEMAND_FIELD not in pricing:
            raise KeyError(f"pricing.{ON_DEMAND_FIELD}")
        cents = pricing[ON_DEMAND_FIELD]
        if cents is not None:
            offers.append({
                **common,
                "offer_id": fid,
                "pricing": Pricing.ON_DEMAND,
                "price_per_hour": decimal(ON_DEMAND_FIELD, cents) / CENTS_PER_DOLLAR,
                "region": None,
                "available": _capacity("available_capacity", pricing.get("available_capacity")),
            })  # fmt: skip
    for entry in spot:
        region = entry["region"]
        price = entry["last_instance_price"]
        if not isinstance(price, str) or not price.strip().startswith("$"):
            raise ValueError(f"last_instance_price {price!r} is not a dollar amount like '$2.40'")
        offers.append({
            **common,
            "offer_id": f"{fid}@{region}",
            "pricing": Pricing.SPOT,
            "price_per_hour": decimal("last_instance_price", price.strip()[1:].strip()),
            "region": region,
            "available": _capacity("capacity", entry.get("capacity")),
        })  # fmt: skip
    return offers
