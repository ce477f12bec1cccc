"""OVHcloud: the public cloud order catalog (EU book), GPU flavors billed by the hour.

Quirks (see docs/pages/notes/eu-providers.md, "OVHcloud"; gpu-index `sources/ovh.py`, SpareCores
sc-crawler `vendors/_ovh.py`):
- `GET https://eu.api.ovh.com/1.0/order/catalog/public/cloud?ovhSubsidiary=FR`, no auth, ~8 MB.
- `locale.currencyCode` is the currency of every price; `addons[]` carry `planCode`,
  `pricings[]` and `blobs` {`commercial.brick`, `technical.gpu` {`model`, `number`,
  `memory.size` GB}, `technical.cpu.cores`, `technical.memory.size` GB}.
- `price` is an integer in **1e-8 of the currency, for the whole flavor** (`h100-380.consumption`
  = 280000000 → 2.80 per hour): divided by `PRICE_UNITS_PER_CURRENCY_UNIT`.
- The billing period comes from the plan code suffix: `.consumption` is hourly (kept),
  `.monthly.postpaid` monthly (skipped: the same flavor billed another way).
- Only `blobs.commercial.brick == "gpu"` add-ons: `ai-*` add-ons carry GPU blobs but bill per
  minute for another product. `win-*` flavors include a Windows licence: skipped.
  `Quadro-RTX5000` is the old Turing card (left to the catalog, never read as RTX 5000 Ada).
- Region lists (`configurations[name=region].values`) are often empty on hourly add-ons (exact
  per-region lists need an authenticated call): then one offer with the region unknown.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import id_field, offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing

NAME = "ovhcloud"
ENV_KEY: str | None = None
KEY_REQUIRED = False
URL = "https://eu.api.ovh.com/1.0/order/catalog/public/cloud?ovhSubsidiary=FR"
INTERVAL = timedelta(hours=6)  # an ~8 MB catalog of list prices, no stock
CURRENCY = "EUR"  # locale.currencyCode of the FR book
TIMEOUT = httpx.Timeout(60.0, connect=10.0)  # an ~8 MB answer
PRICE_UNITS_PER_CURRENCY_UNIT = 100_000_000  # price is 1e-8 of the currency (EU.md)
HOURLY_SUFFIX = ".consumption"
GPU_BRICK = "gpu"
WINDOWS_PREFIX = "win-"


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(client, "GET", URL, provider=NAME, timeout=TIMEOUT)


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
        currency = body["locale"]["currencyCode"]
        addons = body["addons"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ProviderPayloadError(
            f"{NAME}: body is not a catalog with locale.currencyCode and addons ({exc})"
        ) from exc
    if not isinstance(addons, list):
        raise ProviderPayloadError(f"{NAME}: 'addons' is not a list")
    offers_of = partial(_offers_of, currency=currency)
    return offers_of_records(NAME, observed_at, addons, offers_of, id_of=id_field("planCode"))


def _is_hourly_gpu_flavor(addon: dict[str, Any]) -> bool:
    plan = addon.get("planCode") or ""
    brick = ((addon.get("blobs") or {}).get("commercial") or {}).get("brick")
    return (
        brick == GPU_BRICK and plan.endswith(HOURLY_SUFFIX) and not plan.startswith(WINDOWS_PREFIX)
    )


def _hourly_price(addon: dict[str, Any]) -> float:
    pricings = addon["pricings"]
    hourly = [p for p in pricings if p.get("intervalUnit") == "hour"] or pricings
    price = hourly[0]["price"]
    if isinstance(price, bool) or not isinstance(price, int):
        raise ValueError(f"price {price!r} is not a whole number of 1e-8 units")
    return price / PRICE_UNITS_PER_CURRENCY_UNIT


def _regions(addon: dict[str, Any]) -> list[str]:
    for configuration in addon.get("configurations") or []:
        if configuration.get("name") == "region":
            return [str(value) for value in configuration.get("values") or []]
    return []


def _offers_of(addon: dict[str, Any], currency: str) -> list[dict[str, Any]]:
    if not _is_hourly_gpu_flavor(addon):
        return []
    technical = addon["blobs"]["technical"]
    gpu = technical["gpu"]
    flavor = addon["planCode"].removesuffix(HOURLY_SUFFIX)
    common: dict[str, Any] = {
        "gpu_raw": gpu["model"],
        "gpu_count": gpu["number"],
        "vram_gb": (gpu.get("memory") or {}).get("size"),
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": _hourly_price(addon),
        "currency": currency,
        "available": True,  # listed in the order catalog; it states no stock
        "vcpus": (technical.get("cpu") or {}).get("cores"),
        "ram_gb": (technical.get("memory") or {}).get("size"),
    }
    regions = _regions(addon)
    if not regions:
        return [{"offer_id": flavor, "region": None, **common}]
    return [{"offer_id": f"{flavor}@{region}", "region": region, **common} for region in regions]
