"""Verda (formerly DataCrunch): the public pricing page's JSON-LD offers.

Quirks (see docs/pages/notes/eu-providers.md, "Verda"):
- The REST API (`/v1/instance-types`) needs OAuth client credentials; the public page
  `https://verda.com/pricing` embeds `<script type="application/ld+json">` with a schema.org
  `@graph` of `Offer` nodes: `name` like `1x H100 SXM5 80GB on-demand` / `... spot`, `price`,
  `priceCurrency`, `priceSpecification.unitText` (`hour`).
- `1x ...` rows are per GPU per hour (the page lists only 1x): quoted per GPU here.
- The same row can appear twice with the same price: collapsed to one offer. Listed twice at two
  prices, the second is rejected (which one holds is unknowable).
- CPU rows have a blank GPU part (`" on-demand"`): not GPU offers, skipped.
- `CC` rows (confidential computing: `RTX PRO 6000 CC 96GB`, `B300 CC SXM6 268GB`) are their own
  offers (`tier` "confidential") of the same GPU: the `CC` token is left out of `gpu_raw`.
- No location on the page: every Verda location is in Finland or Iceland, so the pipeline marks
  the offers EEA with the country unknown (data/verda_regions.csv).
- Instant-cluster (`8x GB300 SXM6 288GB instant cluster`) and serverless offers
  (`1x H100 SXM5 80GB serverless spot` / `... serverless continuous`) are other products:
  skipped, as are storage offers (`unitText` `GiB-month`). The recorded page (gpu-index
  `tests/fixtures/observatory/verda/pricing_jsonld.html`) shows each.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, decimal
from scrapers.errors import ProviderPayloadError
from scrapers.models import FormFactor, ParseResult, Pricing, json_raw, reason_of

NAME = "verda"
ENV_KEY: str | None = None
KEY_REQUIRED = False
URL = "https://verda.com/pricing"
INTERVAL = timedelta(hours=1)  # a price page whose spot prices move within the day
CURRENCY = "USD"  # the JSON-LD offers' priceCurrency
CONFIDENTIAL_TOKEN = "CC"
CONFIDENTIAL_TIER = "confidential"
PER_HOUR_UNITS = frozenset({"hour", "hr", "h"})
OTHER_PRODUCTS = frozenset({"serverless", "cluster"})
"""A name with one of these words is another product than an instance (see above)."""

_SCRIPT = re.compile(
    rb"<script[^>]*type=[\"']application/ld\+json[\"'][^>]*>(.*?)</script>", re.S | re.I
)
_NAME = re.compile(r"^\s*(?P<count>\d+)x\s+(?P<gpu>.*?)\s*(?P<pricing>on-demand|spot)\s*$", re.I)
_VRAM = re.compile(r"(\d+(?:\.\d+)?)\s*GB\b", re.I)
_PRICING = {"on-demand": Pricing.ON_DEMAND, "spot": Pricing.SPOT}


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(client, "GET", URL, provider=NAME, headers={"Accept": "text/html"})


def _nodes(payload: bytes) -> list[dict[str, Any]]:
    scripts = _SCRIPT.findall(payload)
    if not scripts:
        raise ProviderPayloadError(f"{NAME}: no application/ld+json script in the pricing page")
    nodes: list[dict[str, Any]] = []
    for script in scripts:
        try:
            document = orjson.loads(script)
        except orjson.JSONDecodeError as exc:
            raise ProviderPayloadError(f"{NAME}: a JSON-LD script is not JSON ({exc})") from exc
        for item in document if isinstance(document, list) else [document]:
            graph = item.get("@graph", [item]) if isinstance(item, dict) else []
            nodes.extend(node for node in graph if isinstance(node, dict))
    offers = [node for node in nodes if node.get("@type") == "Offer"]
    if not offers:
        raise ProviderPayloadError(f"{NAME}: the JSON-LD holds no Offer nodes")
    return offers


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    records = _nodes(payload)
    batch = OfferBatch(
        NAME, observed_at, raw_of=lambda i: json_raw(records[i]),
        id_of=lambda i: records[i].get("name"),
    )  # fmt: skip
    seen: dict[tuple[str, str], float] = {}
    for i, record in enumerate(records):
        try:
            offer = _offer_of(record)
            if offer is None:
                continue
            key = (offer["offer_id"], offer["pricing"])
            if key in seen:
                price = offer["price_per_gpu_hour"]
                if seen[key] != price:
                    batch.reject(i, f"listed again at {price} (first at {seen[key]})")
                continue  # the same row again: collapsed
            seen[key] = offer["price_per_gpu_hour"]
            batch.add(i, [offer])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _form_factor(tokens: list[str]) -> FormFactor | None:
    for token in tokens:
        if re.fullmatch(r"SXM\d*", token, re.I):
            return FormFactor.SXM
        if token.lower() == "pcie":
            return FormFactor.PCIE
    return None


def _offer_of(record: dict[str, Any]) -> dict[str, Any] | None:
    match = _NAME.match(record["name"])
    if match is None or not match["gpu"]:  # another product, or a CPU row (" on-demand")
        return None
    tokens = match["gpu"].split()
    if OTHER_PRODUCTS & {token.lower() for token in tokens}:
        return None
    unit = (record.get("priceSpecification") or {}).get("unitText", "hour")
    if str(unit).lower() not in PER_HOUR_UNITS:
        raise ValueError(f"price unit {unit!r} is not per hour")
    confidential = CONFIDENTIAL_TOKEN in tokens
    gpu_raw = " ".join(t for t in tokens if t != CONFIDENTIAL_TOKEN)
    vram = _VRAM.search(gpu_raw)
    count = int(match["count"])
    price = record["price"]
    return {
        "offer_id": f"{count}x {match['gpu']}",
        "gpu_raw": gpu_raw,
        "form_factor": _form_factor(tokens),
        "gpu_count": count,
        "vram_gb": float(vram.group(1)) if vram else None,
        "pricing": _PRICING[match["pricing"].lower()],
        "price_per_gpu_hour": decimal("price", price),
        "currency": record["priceCurrency"],
        "available": True,  # the page lists what can be ordered; it states no stock
        "tier": CONFIDENTIAL_TIER if confidential else None,
    }
