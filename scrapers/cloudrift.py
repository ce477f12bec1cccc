"""CloudRift: the instance-type list (`POST https://api.cloudrift.ai/api/v1/instance-types/list`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- A POST with a versioned envelope, `{"version": "2025-03-21", "data": {"selector":
  {"ByServiceAndLocation": {"services": ["vm"]}}}}` (gpuhunt's `providers/cloudrift.py`, SkyPilot's
  `fetch_cloudrift.py`); gpuhunt sends no key, and a public client's test pins that the catalog
  is read without `X-API-Key`. The answer repeats the envelope: `{"version", "data":
  {"instance_types": [...]}}`.
- An instance type (`rtx49-8c-nr`) names its GPU in `brand_short` (`RTX 4090`, `RTX PRO 6000`,
  `MI350X`) and comes in `variants` by GPU count (`rtx49-8c-nr.1`, `.2`, ...).
- `cost_per_hour` is US cents per *variant* (instance) hour, fractional (`139.36`): divided by
  `CENTS_PER_DOLLAR` and quoted per instance; the per-GPU price is derived.
- `vram` (per GPU), `dram` and `disk` are bytes, read as GiB (÷ 2^30) as gpuhunt does; vCPUs are
  `logical_cpu_count` (threads, as SkyPilot's vCPUs), `cpu_count` when that is absent.
- `nodes_per_dc` lists the datacenters that host the variant (one offer each, as gpuhunt lists
  them); `available_nodes_per_dc` how many nodes are free there now (dstack's backend marks a
  variant available where it is above 0). A variant hosted nowhere is one offer without a region,
  not available. No spot pricing (SkyPilot: "CloudRift doesn't have spot instances yet").
- Datacenter ids start with their country (`us-east-nc-nr-1`), placed in
  `data/cloudrift_regions.csv`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import id_field, number, offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing

NAME = "cloudrift"
ENV_KEY = None
KEY_REQUIRED = False  # the instance-type list answers without a key (gpuhunt sends none)
URL = "https://api.cloudrift.ai/api/v1/instance-types/list"
INTERVAL = timedelta(minutes=30)  # free nodes per datacenter move within the hour
CURRENCY = "USD"
API_VERSION = "2025-03-21"  # the request envelope's version (gpuhunt's CLOUDRIFT_API_VERSION)
REQUEST = {"version": API_VERSION,
           "data": {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}}}  # fmt: skip
"""Every virtual-machine instance type in every location."""
CENTS_PER_DOLLAR = 100  # cost_per_hour is US cents per instance-hour (gpuhunt: / 100)
BYTES_PER_GIB = 1024**3  # vram, dram and disk are bytes (gpuhunt, SkyPilot: / 1024**3)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "POST",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        json=REQUEST,
        auth_hint="the instance-type list refused a request without a key; it may need one now",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        data = orjson.loads(payload)["data"]
        types = data["instance_types"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ProviderPayloadError(
            f"{NAME}: body is not JSON with data.instance_types ({exc}) at {URL}; the answer "
            "changed shape, update scrapers/cloudrift.py"
        ) from exc
    if not isinstance(types, list):
        raise ProviderPayloadError(f"{NAME}: data.instance_types is not a list")
    variants = [
        (instance_type, variant)
        for instance_type in types
        for variant in (_variants(instance_type) or [None])
    ]
    return offers_of_records(
        NAME,
        observed_at,
        variants,
        lambda pair: _offers_of(*pair),
        id_of=lambda pair: id_field("name")(pair[1] if pair[1] is not None else pair[0]),
    )


def _variants(instance_type: Any) -> list[Any]:
    variants = instance_type.get("variants") if isinstance(instance_type, dict) else None
    return variants if isinstance(variants, list) else []


def _gib(variant: dict[str, Any], key: str) -> float | None:
    value = number(key, variant.get(key))
    return None if value is None else round(value / BYTES_PER_GIB, 2)


def _counts(variant: dict[str, Any], key: str) -> dict[str, int]:
    counts = variant.get(key) or {}
    if not isinstance(counts, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in counts.values()
    ):
        raise TypeError(f"{key} is not a map of datacenter to node count: {counts!r}")
    return counts


def _offers_of(instance_type: Any, variant: Any) -> list[dict[str, Any]]:
    if not isinstance(instance_type, dict):
        raise TypeError(f"an instance type is not an object: {instance_type!r}")
    if not isinstance(variant, dict):
        raise TypeError(f"instance type {instance_type.get('name')!r} has no variants")
    brand = instance_type["brand_short"]
    if not isinstance(brand, str) or not brand.strip():
        raise ValueError(f"brand_short is not a GPU name: {brand!r}")
    cents = number("cost_per_hour", variant["cost_per_hour"])
    if cents is None:
        raise ValueError("cost_per_hour is null")
    hosted, free = _counts(variant, "nodes_per_dc"), _counts(variant, "available_nodes_per_dc")
    vcpus = variant.get("logical_cpu_count", variant.get("cpu_count"))
    common = {
        "gpu_raw": brand.strip(),
        "gpu_count": variant["gpu_count"],
        "vram_gb": _gib(variant, "vram"),
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": cents / CENTS_PER_DOLLAR,
        "vcpus": number("logical_cpu_count", vcpus),
        "ram_gb": _gib(variant, "dram"),
        "disk_gb": _gib(variant, "disk"),
    }
    name = variant["name"]
    if not hosted:
        return [{**common, "offer_id": name, "region": None, "available": False}]
    return [
        {**common, "offer_id": f"{name}@{dc}", "region": dc, "available": free.get(dc, 0) > 0}
        for dc in hosted
    ]
