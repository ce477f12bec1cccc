"""Latitude.sh: the GPU bare-metal plans with per-site stock (`GET /plans?filter[gpu]=true`),
key required.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The key is the buyer's Latitude.sh API key, read from `LATITUDESH_API_KEY` (the variable
  SkyPilot's `fetch_latitude.py` reads), sent as `Authorization: Bearer` (Latitude's SDKs take
  it as a bearer token).
- The answer is JSON:API: `data[]` of `{id, type: "plans", attributes}`; `attributes.specs`
  holds `cpu{cores, count}`, `memory{total}` (GB), `drives[{count, size: "500 GB"}]` and
  `gpu{count, type, vram_per_gpu}` (`gpu: {}` on a CPU plan: no offer; the filter should have
  left it out). A `links.next` would mean a page left unread: a payload error, never fewer
  offers.
- `regions[]` are countries (`name: "United States"`), each with its sites:
  `locations.available` (where the plan can be deployed at all) and `locations.in_stock` (where
  it can be deployed now; SkyPilot: "the regions list alone is NOT availability"). One offer per
  plan and site of `available`, available when the site is also `in_stock`.
- `pricing.USD.hour` is the price of the **whole server** per hour (SkyPilot: "a 4-GPU plan's
  hourly price is for the entire server"), per region (sites of one country share it); per GPU
  derived. `BRL` prices are the same list in reais: not read. A region without a USD hourly price
  gives no offer (it would read as free). Bare metal, no spot.
- Sites are Latitude's slugs (`ASH`, `FRA`, `SAO2`, `TYO3`), placed by
  `data/latitude_regions.csv`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, fetch_with_key
from scrapers.batch import decimal, number, offers_of_records, whole
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list

NAME = "latitude"
ENV_KEY = "LATITUDESH_API_KEY"  # the variable SkyPilot's fetch_latitude.py reads
KEY_REQUIRED = True  # the plans API answers only to a key
URL = "https://api.latitude.sh/plans?filter%5Bgpu%5D=true"  # filter[gpu]=true
INTERVAL = timedelta(minutes=30)  # per-site stock of bare-metal servers moves within hours
CURRENCY = "USD"  # pricing.USD; the BRL list beside it is not read
GB_PER = {"GB": 1.0, "TB": 1000.0}
"""Drive sizes as served (`"500 GB"`, `"3.8 TB"`), in decimal GB."""
_DRIVE_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GB|TB)\s*$", re.IGNORECASE)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_with_key(
        client,
        URL,
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        auth_hint=f"check {ENV_KEY} (a Latitude.sh API key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "data", NAME)
    links = body.get("links")
    if isinstance(links, dict) and links.get("next"):
        raise ProviderPayloadError(
            f"{NAME}: the plans answer has a next page ({str(links['next'])[:120]}); reading one "
            "page would lose plans: update scrapers/latitude.py to follow it"
        )
    return offers_of_records(NAME, observed_at, body["data"], _offers_of, id_of=_plan_id)


def _plan_id(plan: Any) -> object:
    if not isinstance(plan, dict):
        return None
    attributes = plan.get("attributes")
    slug = attributes.get("slug") if isinstance(attributes, dict) else None
    return slug or plan.get("id")


def _disk_gb(drives: Any) -> float | None:
    if not drives:
        return None
    total = 0.0
    for drive in drives:
        match = _DRIVE_SIZE.match(str(drive["size"]))
        if match is None:
            raise ValueError(f"drive size {drive['size']!r} is not '<n> GB' or '<n> TB'")
        total += (
            whole("drive count", drive.get("count", 1)) * float(match[1]) * GB_PER[match[2].upper()]
        )
    return total


def _sites(locations: dict[str, Any], key: str) -> list[str]:
    sites = locations.get(key) or []
    if not isinstance(sites, list) or not all(isinstance(s, str) and s.strip() for s in sites):
        raise ValueError(f"locations.{key} is not a list of site names: {sites!r}")
    return [site.strip() for site in sites]


def _offers_of(plan: Any) -> list[dict[str, Any]]:
    attributes = plan["attributes"]
    slug, specs = attributes["slug"], attributes["specs"]
    if not isinstance(slug, str) or not slug.strip():
        raise ValueError(f"slug is not a non-empty string: {slug!r}")
    gpu = specs.get("gpu") or {}
    if not gpu.get("count"):
        return []  # a CPU plan
    cpu = specs.get("cpu") or {}
    cores = number("cpu.cores", cpu.get("cores"))
    common = {
        "gpu_raw": gpu["type"],
        "gpu_count": whole("gpu.count", gpu["count"]),
        "vram_gb": number("gpu.vram_per_gpu", gpu.get("vram_per_gpu")),
        "pricing": Pricing.ON_DEMAND,
        "vcpus": None if cores is None else cores * whole("cpu.count", cpu.get("count") or 1),
        "ram_gb": number("memory.total", (specs.get("memory") or {}).get("total")),
        "disk_gb": _disk_gb(specs.get("drives")),
    }
    offers = []
    for region in attributes["regions"]:
        hour = ((region.get("pricing") or {}).get("USD") or {}).get("hour")
        if hour is None:
            continue  # no USD price here: no offer rather than a free one
        locations = region.get("locations") or {}
        in_stock = set(_sites(locations, "in_stock"))
        for site in dict.fromkeys([*_sites(locations, "available"), *in_stock]):
            offers.append({**common, "offer_id": f"{slug.strip()}@{site}", "region": site,
                           "available": site in in_stock,
                           "price_per_hour": decimal("pricing.USD.hour", hour)})  # fmt: skip
    return offers
