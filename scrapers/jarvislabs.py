"""JarvisLabs: the GPU catalogue with live capacity (`GET /misc/server_meta`), key required.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The key is the buyer's JarvisLabs API token, read from `JL_API_KEY` (the variable JarvisLabs'
  own `jl` CLI and gpuhunt's `providers/jarvislabs.py` read), sent as `Authorization: Bearer`
  (jarvislabsai/jarvislabs `jarvislabs/transport.py`). A bad token answers 401 `Invalid token`,
  none 403 `Not authenticated`.
- The host is the Noida backend, the SDK's default (`jarvislabs/constants.py` `REGION_URLS`);
  every backend lists every region (a published read of 2026-08-17 found `backendn` and
  `backendc` byte-identical; `backendeu` quoted europe-01's H200 at 3.80 against their 3.99).
- The body is `{"server_meta": [...], "cpu_meta": {...}, "currency": "USD"}`; `cpu_meta` holds
  CPU-only VMs, not GPU offers. The prices are in `currency` (USD unless an account is billed
  in INR: the SDK shows ₹ then); a body without it is read as USD.
- `price_per_hour` and `spot_price` are **per GPU** ("per GPU pricing", jarvislabs.ai/pricing;
  the 2026-08-17 read billed 8 x 1.89 for an 8-GPU VM). A row lets an instance take 1 to
  `num_gpus` GPUs (a digit string, `"8"`; absent: 1, as europe-01's one-GPU rows): we publish
  the 1-GPU and the largest instance, each at the per-GPU price with `cpus_per_gpu` and
  `ram_per_gpu` (GB) times its GPUs.
- `workload_type` is `"vm"`, `"container"` or null (an older row that serves both: the SDK's
  `server_meta.py` matches null for either). **Spot is for GPU containers only** ("Spot
  instances are only supported for GPU containers", SDK `instances.py`; gpuhunt PR #235
  removed its spot VM offers): a `"vm"` row gives no spot offer even when it carries a
  `spot_price`. The workload is the offer's `tier` and part of its id.
- Availability is live: on-demand is admitted on `effective_num_free_devices` (else
  `num_free_devices`), spot on `num_free_devices` (SDK `server_meta._available_devices`); an
  instance is available when that many GPUs are free. `vram` is a string (`"80"`).
- `price_per_week`/`price_per_month` are incoherent and unused by the SDK: never read.
- Regions (`india-noida-01`, `india-chennai-01`, `india-01`, `europe-01` in Finland per the
  FAQ "India and Finland") are placed by `data/jarvislabs_regions.csv`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, fetch_with_key
from scrapers.batch import decimal, id_field, number, offers_of_records, whole
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list

NAME = "jarvislabs"
ENV_KEY = "JL_API_KEY"  # JarvisLabs' own variable (jl CLI, gpuhunt)
KEY_REQUIRED = True  # server_meta answers 403 without a token
URL = "https://backendn.jarvislabs.net/misc/server_meta"
INTERVAL = timedelta(minutes=15)  # free devices move within the hour
CURRENCY = "USD"  # server_meta's `currency` for a USD-billed account

WORKLOADS = {"vm": "vm", "container": "container", None: "vm or container"}
"""`workload_type` as served → the offer's tier."""
SPOT_WORKLOADS = frozenset({"container", None})
"""Rows whose `spot_price` is an offer: GPU containers (SDK: spot is for containers only)."""
_VRAM_GB = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:GB)?\s*$", re.IGNORECASE)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_with_key(
        client,
        URL,
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        auth_hint=f"check {ENV_KEY} (a JarvisLabs API token)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "server_meta", NAME)
    currency = body.get("currency", CURRENCY)
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise ProviderPayloadError(f"{NAME}: currency {currency!r} is not an ISO 4217 code")
    return offers_of_records(
        NAME,
        observed_at,
        body["server_meta"],
        lambda row: _offers_of(row, currency),
        id_of=id_field("gpu_type"),
    )


def _text(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is not a non-empty string: {value!r}")
    return value.strip()


def _free(row: dict[str, Any], key: str) -> int | None:
    value = row.get(key)
    return None if value is None else whole(key, value)


def _vram_gb(value: object) -> float | None:
    if value is None or isinstance(value, int | float):
        return number("vram", value)
    match = _VRAM_GB.match(str(value))
    if match is None:
        raise ValueError(f"vram {value!r} is not a number of GB")
    return float(match[1])


def _offers_of(row: Any, currency: str) -> list[dict[str, Any]]:
    if not isinstance(row, dict):
        raise TypeError(f"a server_meta row is not an object: {row!r}")
    gpu_type, region = _text(row, "gpu_type"), _text(row, "region")
    workload = row.get("workload_type")
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload_type {workload!r} (known: vm, container, null)")
    largest = whole("num_gpus", row.get("num_gpus") or 1)
    if largest < 1:
        raise ValueError(f"num_gpus {largest} is not a count of GPUs")
    cpus = number("cpus_per_gpu", row.get("cpus_per_gpu"))
    ram_gb = number("ram_per_gpu", row.get("ram_per_gpu"))
    free_now = _free(row, "num_free_devices") or 0
    effective = _free(row, "effective_num_free_devices")
    prices = [(Pricing.ON_DEMAND, decimal("price_per_hour", row["price_per_hour"]),
               free_now if effective is None else effective)]  # fmt: skip
    if workload in SPOT_WORKLOADS and row.get("spot_price") is not None:
        prices.append((Pricing.SPOT, decimal("spot_price", row["spot_price"]), free_now))
    suffix = f"/{workload}" if workload else ""
    return [
        {
            "offer_id": f"{gpu_type}x{count}@{region}{suffix}",
            "gpu_raw": gpu_type,
            "vram_gb": _vram_gb(row.get("vram")),
            "gpu_count": count,
            "pricing": pricing,
            "price_per_gpu_hour": per_gpu,
            "currency": currency,
            "region": region,
            "available": free >= count,
            "tier": WORKLOADS[workload],
            "vcpus": None if cpus is None else cpus * count,
            "ram_gb": None if ram_gb is None else ram_gb * count,
        }
        for pricing, per_gpu, free in prices
        for count in sorted({1, largest})
    ]
