"""Voltage Park: the keyless bare-metal locations (`GET /api/v1/bare-metal/locations`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The dashboard's logged-out call answers without a key (getcomputable/gpu-index
  `observatory/sources/voltagepark.py`, verified live 2026-08-22). The body is one page:
  `{"results": [...], "total_result_count", "has_previous", "has_next"}`; a page that says more
  rows exist (`has_next`, or a total above the rows served) is a payload error, never fewer
  offers.
- Each result is a location (an opaque UUID `id`, no place name) selling nodes of
  `specs_per_node` (`gpu_model` `h100-sxm5-80gb`, `gpu_count` 8, CPUs, RAM and storage GB) on two
  networks: `gpu_price_ethernet` and `gpu_price_infiniband`, USD per GPU-hour as **strings**
  (`"1.99"`; a number is read too). One on-demand offer per location and network (`tier`), a
  whole node quoted per GPU. A result with another `gpu_price_*` field is a reject naming it
  (a tier this parser does not read; gpu-index refuses it the same way).
- `gpu_count_<network>` is how many GPUs are free there: available when a whole node's worth is.
  The recorded answer has 0 on both, so its offers are listed, not available.
- The answer names no place; Voltage Park's data centers are in the United States
  (`data/voltagepark_regions.csv`).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import id_field, number, offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list

NAME = "voltagepark"
ENV_KEY = None
KEY_REQUIRED = False  # the dashboard's logged-out locations call (gpu-index)
URL = "https://cloud-api.voltagepark.com/api/v1/bare-metal/locations"
INTERVAL = timedelta(minutes=30)  # free GPUs per location move within the hour
CURRENCY = "USD"  # the answer names none; Voltage Park prints "$1.99/GPU/hour" (gpu-index)
NETWORKS = ("ethernet", "infiniband")
"""The networks a location prices: `gpu_price_<network>`, `gpu_count_<network>`."""
PRICE = re.compile(r"^\s*\d+(\.\d+)?\s*$")


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        auth_hint="the logged-out locations call refused the request; it may need a key now",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "results", NAME)
    results, total = body["results"], body.get("total_result_count")
    if body.get("has_next") or (isinstance(total, int) and total > len(results)):
        raise ProviderPayloadError(
            f"{NAME}: the answer has more locations ({total}) than its page ({len(results)}); "
            "paging is not read, update scrapers/voltagepark.py"
        )
    return offers_of_records(NAME, observed_at, results, _offers_of, id_of=id_field("id"))


def _price(field: str, value: object) -> float:
    if isinstance(value, str) and PRICE.match(value):
        return float(value)
    price = number(field, value)  # a number flip is read; anything else is a TypeError
    if price is None:
        raise ValueError(f"{field} is null")
    return price


def _offers_of(location: Any) -> list[dict[str, Any]]:
    if not isinstance(location, dict):
        raise TypeError(f"a location is not an object: {location!r}")
    known = {f"gpu_price_{network}" for network in NETWORKS}
    unknown = sorted(k for k in location if k.startswith("gpu_price") and k not in known)
    if unknown:
        raise ValueError(f"unknown price field(s) {unknown}: a tier this parser does not read")
    specs = location["specs_per_node"]
    if not isinstance(specs, dict):
        raise TypeError(f"specs_per_node is not an object: {specs!r}")
    model, gpus = specs["gpu_model"], specs["gpu_count"]
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"gpu_model is not a GPU name: {model!r}")
    offers = []
    for network in NETWORKS:
        free = location.get(f"gpu_count_{network}") or 0
        if isinstance(free, bool) or not isinstance(free, int):
            raise TypeError(f"gpu_count_{network} is not a count: {free!r}")
        offers.append({
            "offer_id": f"{location['id']}-{network}",
            "gpu_raw": model.strip(),
            "gpu_count": gpus,
            "pricing": Pricing.ON_DEMAND,
            "price_per_gpu_hour": _price(f"gpu_price_{network}", location[f"gpu_price_{network}"]),
            "vcpus": number("cpu_count", specs.get("cpu_count")),
            "ram_gb": number("ram_gb", specs.get("ram_gb")),
            "disk_gb": number("storage_gb", specs.get("storage_gb")),
            "region": None,
            "available": isinstance(gpus, int) and free >= gpus > 0,
            "tier": network,
        })  # fmt: skip
    return offers
