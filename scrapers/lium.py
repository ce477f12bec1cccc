"""Lium: the public node feed (`GET https://lium.io/api/public/v1/nodes`), every rentable node.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- No key: the feed is public and documented (docs.lium.io/developers/public-nodes-feed, as
  gpuhunt's `providers/lium.py` cites it) with a compatibility promise: fields are only added
  under `/public/v1`. SkyPilot's `fetch_lium.py` reads the same feed; getcomputable/gpu-index
  reads the site's `/api/executors` proxy instead.
- The body is an object with `nodes[]` (plus `generated_at`, `count`); each node is one
  provider's machine, so one GPU model appears many times (a marketplace, like Vast.ai).
- `price_per_gpu_hour` is USD per GPU-hour, quoted per GPU here; `price_per_node_hour` is the
  whole node's (`gpu_count` GPUs) and only cross-checks it: a node where the two disagree by more
  than a cent is a reject with both figures.
- `tier` is `secure` (on-demand) or `spot` (interruptible): one pricing each, kept in `tier`
  too; another tier is a reject naming it. gpu-index reads the same split from its executors'
  `tier`; SkyPilot leaves spot nodes out.
- A node rents from `min_rentable_gpu_count` up to `available_gpu_count` GPUs (gpuhunt: most
  nodes set the minimum to `gpu_count`; a missing minimum means the whole node). We publish the
  largest order free now and, when smaller, the smallest order, each at the per-GPU price with
  the host's vCPUs, RAM and disk in proportion to its share of the GPUs (the host's own RAM
  reserve is not subtracted). A node with fewer GPUs free than its smallest order is listed
  whole and not available.
- `gpu_memory_gb` is read as VRAM per GPU as stated (140 for an H200: the catalog still
  resolves it to the 141 GB part).
- Places are per node: `country_code` (ISO 3166-1 alpha-2) ends the region text
  (`Chiyoda City, JP`), which the pipeline reads as the country; no regions file is needed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import id_field, number, offers_of_records, text_field
from scrapers.models import CENT_TOLERANCE_USD, ParseResult, Pricing, json_object_with_list

NAME = "lium"
ENV_KEY = None
KEY_REQUIRED = False  # a public feed
URL = "https://lium.io/api/public/v1/nodes"
INTERVAL = timedelta(minutes=15)  # a marketplace: nodes are rented and freed within the hour
CURRENCY = "USD"  # every price on lium.io is in $ (gpu-index lium.py); the feed names none

PRICINGS = {"secure": Pricing.ON_DEMAND, "spot": Pricing.SPOT}
"""Lium's `tier` → our pricing."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        auth_hint="the public node feed refused the request; see docs.lium.io",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "nodes", NAME)
    return offers_of_records(NAME, observed_at, body["nodes"], _offers_of, id_of=id_field("id"))


def _count(node: dict[str, Any], key: str) -> int:
    value = node[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{key} is not a count: {value!r}")
    return value


def _region(node: dict[str, Any]) -> str | None:
    code = node.get("country_code")
    if not isinstance(code, str) or not code.strip():
        return None
    city = node.get("city")
    place = city.strip() if isinstance(city, str) else ""
    return f"{place}, {code.strip().upper()}" if place else code.strip().upper()


def _share(node: dict[str, Any], key: str, share: float) -> float | None:
    value = number(key, node.get(key))
    return None if value is None else round(value * share, 2)


def _offers_of(node: Any) -> list[dict[str, Any]]:
    if not isinstance(node, dict):
        raise TypeError(f"a node is not an object: {node!r}")
    node_id, tier = text_field(node, "id"), text_field(node, "tier")
    pricing = PRICINGS.get(tier)
    if pricing is None:
        raise ValueError(f"unknown tier {tier!r} (known: {', '.join(PRICINGS)})")
    gpus, free = _count(node, "gpu_count"), _count(node, "available_gpu_count")
    smallest = node.get("min_rentable_gpu_count") or gpus
    if isinstance(smallest, bool) or not isinstance(smallest, int):
        raise TypeError(f"min_rentable_gpu_count is not a count: {smallest!r}")
    per_gpu = number("price_per_gpu_hour", node["price_per_gpu_hour"])
    per_node = number("price_per_node_hour", node.get("price_per_node_hour"))
    whole = None if per_gpu is None else per_gpu * gpus
    if whole is not None and per_node is not None and abs(whole - per_node) > CENT_TOLERANCE_USD:
        raise ValueError(
            f"price_per_node_hour {per_node} is not price_per_gpu_hour {per_gpu} x gpu_count {gpus}"
        )
    free = min(free, gpus)
    rentable = free >= max(smallest, 1)
    counts = sorted({max(smallest, 1), free}) if rentable else [gpus]
    common = {
        "gpu_raw": text_field(node, "gpu_model"),
        "vram_gb": number("gpu_memory_gb", node.get("gpu_memory_gb")),
        "pricing": pricing,
        "price_per_gpu_hour": per_gpu,
        "region": _region(node),
        "available": rentable,
        "tier": tier,
    }
    return [
        {
            **common,
            "offer_id": f"{node_id}x{count}",
            "gpu_count": count,
            "vcpus": _share(node, "cpu_count", count / gpus) if gpus else None,
            "ram_gb": _share(node, "ram_gb", count / gpus) if gpus else None,
            "disk_gb": _share(node, "disk_gb", count / gpus) if gpus else None,
        }
        for count in counts
    ]
