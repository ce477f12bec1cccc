"""Shadeform (an aggregator): every cloud's instance types (`GET /v1/instances/types`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Shadeform resells other clouds' machines: each instance type names the cloud behind it
  (`cloud`: `lambdalabs`, `hyperstack`, `massedcompute`, ...). `provider` stays `shadeform`; the
  cloud becomes the offer's `seller`, as our provider name where it has another spelling
  (`SELLERS`: `lambdalabs` → `lambda`, `datacrunch` → `verda`), else lower-case as served.
- A key is required: header `X-API-KEY` (SkyPilot's `fetch_shadeform.py`), from
  `SHADEFORM_API_KEY`.
- The route is called without `available=true` (SkyPilot passes it): the answer then lists the
  sold-out regions too, so a region that empties becomes an unavailable offer, not a gap.
- `hourly_price` is integer US cents per hour for the *whole instance* (SkyPilot divides by
  100; gpu-index's `shadeform.py`: "integer CENTS per INSTANCE hour"): divided by
  `CENTS_PER_DOLLAR` here, per GPU by `configuration.num_gpus`.
- One offer per instance type and `availability[]` region, `available` as stated there; one
  price per type in every region. No spot prices are listed.
- `configuration.gpu_type` names the model with Shadeform's underscores (`A100_80G`, `H100_nvl`,
  `RTX6000Ada`, `GAUDI2`), `interconnect` its board (`sxm4`..`sxm6`, `pcie`) and
  `vram_per_gpu_in_gb` the memory per GPU; the GPU name is `gpu_type` and the interconnect
  (`A100 80G SXM4`), resolved with the VRAM. CPU-only types (`gpu_type` `CPU`, `num_gpus` 0) are
  skipped, as SkyPilot and gpu-index do: not GPU offers, so not rejects either.
- Regions are Shadeform's own (`montreal-canada-2`, `paris-france-5`: city, country, number),
  placed by their city-country prefix in `data/shadeform_regions.csv`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, fetch_with_key
from scrapers.batch import decimal, number, offers_of_records
from scrapers.models import (
    FormFactor,
    ParseResult,
    Pricing,
    json_object_with_list,
    seller_name,
)

NAME = "shadeform"
ENV_KEY = "SHADEFORM_API_KEY"
KEY_REQUIRED = True  # every route needs X-API-KEY
URL = "https://api.shadeform.ai/v1/instances/types"
INTERVAL = timedelta(minutes=15)  # resold capacity per region moves within the hour
CURRENCY = "USD"
CENTS_PER_DOLLAR = 100  # hourly_price is US cents per instance-hour (SkyPilot fetch_shadeform.py)
CPU_TYPE = "CPU"

SELLERS = {"lambdalabs": "lambda", "datacrunch": "verda"}
"""Shadeform's `cloud` → our provider name, where the two differ; any other cloud is kept
lower-case as served (`hyperstack`, `crusoe`, `massedcompute`)."""

FORM_FACTORS = {"sxm4": FormFactor.SXM, "sxm5": FormFactor.SXM, "sxm6": FormFactor.SXM,
                "pcie": FormFactor.PCIE}  # fmt: skip
"""`configuration.interconnect` → ours; an NVL card (`H100_nvl`) says so in its name instead."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_with_key(
        client,
        URL,
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        header="X-API-KEY",
        scheme="",
        auth_hint=f"check {ENV_KEY}",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "instance_types", NAME)
    return offers_of_records(NAME, observed_at, body["instance_types"], _offers_of, id_of=_type_id)


def _type_id(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    return f"{record.get('cloud')}:{record.get('shade_instance_type')}"


def _form_factor(gpu_type: str, interconnect: object) -> FormFactor | None:
    if "nvl" in gpu_type.lower().split("_"):
        return FormFactor.NVL
    return FORM_FACTORS.get(str(interconnect).lower())


def _offers_of(record: Any) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise TypeError(f"an instance type is not an object: {record!r}")
    config = record["configuration"]
    gpu_type = config["gpu_type"]
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        raise ValueError(f"configuration.gpu_type is not a non-empty string: {gpu_type!r}")
    if gpu_type == CPU_TYPE or config.get("num_gpus") == 0:
        return []
    interconnect = config.get("interconnect")
    gpu_raw = gpu_type.replace("_", " ")
    if isinstance(interconnect, str) and interconnect.lower().startswith("sxm"):
        gpu_raw = f"{gpu_raw} {interconnect.upper()}"
    availability = record["availability"]
    if not isinstance(availability, list) or not all(isinstance(a, dict) for a in availability):
        raise TypeError(f"availability is not a list of regions: {availability!r}")
    type_id = _type_id(record)
    common: dict[str, Any] = {
        "seller": seller_name(record["cloud"], SELLERS),
        "gpu_raw": gpu_raw,
        "form_factor": _form_factor(gpu_type, interconnect),
        "gpu_count": config["num_gpus"],
        "vram_gb": number("vram_per_gpu_in_gb", config.get("vram_per_gpu_in_gb")) or None,
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": decimal("hourly_price", record["hourly_price"]) / CENTS_PER_DOLLAR,
        "vcpus": number("vcpus", config.get("vcpus")),
        "ram_gb": number("memory_in_gb", config.get("memory_in_gb")),
        "disk_gb": number("storage_in_gb", config.get("storage_in_gb")),
        "tier": record.get("deployment_type"),
    }
    if not availability:
        return [{"offer_id": type_id, "region": None, "available": False, **common}]
    return [
        {
            "offer_id": f"{type_id}@{place['region']}",
            "region": place["region"],
            "available": _flag("available", place["available"]),
            **common,
        }
        for place in availability
    ]


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} is not true/false: {value!r}")
    return value
