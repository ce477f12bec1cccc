"""Hetzner: the GEX dedicated GPU servers, from the website's own price feed.

Quirks (see docs/pages/notes/eu-providers.md, "Hetzner"):
- No price API without Robot credentials; the website loads
  `https://www.hetzner.com/_resources/app/data/app/live_data_prices.json`:
  `products.{KEY}.locations[]` {`countryCode`, `datacenter`, `active`, `prices` {`hourly`,
  `monthly`, `setup` → {`EUR`, `USD`} as **strings**, net of VAT}}. Unofficial: a shape change
  is a bad payload (a failed run).
- GPU specs are not in the feed: `PRODUCTS` maps the keys (GEX131 = `ROBOT_1747`, GEX63 =
  `ROBOT_1767`: RTX PRO 6000 Blackwell Max-Q 96 GB; GEX45 = `ROBOT_1768`: RTX PRO 4000
  Blackwell 24 GB). Other keys are other products.
- Billing: hourly up to the monthly cap, plus a one-off setup fee: all three kept, in EUR (the
  pipeline converts them with the ECB rate). The feed's own `USD` figures are not used for the
  price: the parser keeps the hourly one (`published_usd_per_hour`) for the conversion to be
  checked against, and refuses a location whose hourly USD figure is missing or not positive.
- `datacenter: "ALL"` is location-independent: the region is then unknown. An inactive location
  is listed as not available.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import httpx

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, decimal
from scrapers.models import ParseResult, Pricing, json_object_member, json_raw, reason_of

NAME = "hetzner"
ENV_KEY: str | None = None
KEY_REQUIRED = False
URL = "https://www.hetzner.com/_resources/app/data/app/live_data_prices.json"
INTERVAL = timedelta(hours=6)  # a price feed of dedicated servers, changed rarely
CURRENCY = "EUR"
ANY_DATACENTER = "ALL"


class Product(NamedTuple):
    name: str
    gpu_raw: str
    vram_gb: float


PRODUCTS = {
    "ROBOT_1747": Product("GEX131", "RTX PRO 6000 Blackwell Max-Q", 96.0),
    "ROBOT_1767": Product("GEX63", "RTX PRO 6000 Blackwell Max-Q", 96.0),
    "ROBOT_1768": Product("GEX45", "RTX PRO 4000 Blackwell", 24.0),
}
"""Feed keys of the GEX servers (Hetzner GPU matrix page `product-key` attributes, EU.md)."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(client, "GET", URL, provider=NAME)


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    products = json_object_member(payload, "products", NAME)
    records = list(_records(products))
    batch = OfferBatch(
        NAME, observed_at, raw_of=lambda i: json_raw(_served(records[i][1])),
        id_of=lambda i: f"{records[i][0]}@{_datacenter_of(records[i][1])}",
    )  # fmt: skip
    for i, (key, location) in enumerate(records):
        try:
            batch.add(i, [_offer_of(PRODUCTS[key], location)])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _records(products: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(product key, location) of each listed location; a product whose `locations` is no list
    is one record, rejected with the reason."""
    for key in PRODUCTS:
        product = products.get(key)
        locations = product.get("locations") if isinstance(product, dict) else product
        if isinstance(locations, list):
            yield from ((key, location) for location in locations)
        elif locations is not None:
            yield key, MalformedList(locations)


class MalformedList(NamedTuple):
    """A product's `locations` that is no list (a record of its own, rejected)."""

    served: Any


def _served(location: Any) -> Any:
    return location.served if isinstance(location, MalformedList) else location


def _datacenter_of(location: Any) -> Any:
    return location.get("datacenter") if isinstance(location, dict) else None


def _amount(prices: dict[str, Any], period: str, currency: str) -> float:
    return decimal(f"prices.{period}.{currency}", prices[period][currency])


def _offer_of(product: Product, location: Any) -> dict[str, Any]:
    if isinstance(location, MalformedList):
        raise TypeError(f"{product.name}: locations is not a list")
    if not isinstance(location, dict):
        raise TypeError(f"{product.name}: a location is not an object")
    prices = location["prices"]
    if _amount(prices, "hourly", "USD") <= 0:
        raise ValueError("prices.hourly.USD must be positive (the feed's own check figure)")
    datacenter = location["datacenter"]
    region = None if datacenter == ANY_DATACENTER else datacenter
    return {
        "offer_id": f"{product.name}@{datacenter}",
        "gpu_raw": product.gpu_raw,
        "gpu_count": 1,  # every GEX server has one GPU (Hetzner GPU matrix)
        "vram_gb": product.vram_gb,
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": _amount(prices, "hourly", CURRENCY),
        "currency": CURRENCY,
        "setup_fee_native": _amount(prices, "setup", CURRENCY),
        "price_per_month_native": _amount(prices, "monthly", CURRENCY),
        "published_usd_per_hour": _amount(prices, "hourly", "USD"),
        "region": region,
        "available": bool(location.get("active", True)),
        "tier": product.name,
    }
