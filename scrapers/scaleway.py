"""Scaleway: every zone's instance types and their availability (the public instance API).

Quirks (see docs/pages/notes/eu-providers.md, "Scaleway"):
- `GET /instance/v1/zones/{zone}/products/servers?per_page=100&page=N` and
  `.../products/servers/availability?...`: answered without a token in practice (getcomputable
  gpu-index `observatory/sources/scaleway.py`). Pages are read until an empty one, or until the
  `total_count` the body states (the API's `ListServersTypesResponse` field; recordings trimmed
  it away) has been read: a zone may answer fewer types per page than asked (the recorded
  fr-par-2 page 1 holds 18 types and page 2 three more), so a short page never ends the listing.
  A zone answering 404 has no products here: skipped; a page after the first answering 404 ends
  its listing.
- `servers` is an object keyed by commercial type; `gpu` is the count (0 for CPU types, skipped),
  `gpu_info.gpu_name` the model (`H100-PCIe`, `H100-SXM`, `L4`, `L40S`, `B300-SXM`, `P100`),
  `gpu_info.gpu_memory` **bytes** per GPU, `ram` bytes, `hourly_price` **EUR per hour for the
  whole instance** (ex-VAT).
- `H100-1-80G`/`H100-2-80G` are PCIe boards (no `SXM` in the type name): the form factor comes
  from `gpu_name`, else from `SXM` in the type name, else none.
- Availability: `available` and `scarce` can be created now, `shortage` cannot; a type missing
  from the availability answer is counted as not available. No spot pricing.
- `fetch` gathers every zone's pages into one JSON document `{"zones": {zone: {"servers": {...},
  "availability": {...}}}}`, which `parse` reads. A directory of recorded answers
  (`servers-<zone>-<page>.json`, `availability-<zone>-<page>.json`) replays through
  `replay_directory`; zones without files answer 404, so are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch
from scrapers.errors import ProviderHTTPError
from scrapers.models import (
    FormFactor,
    ParseResult,
    Pricing,
    json_object_member,
    json_raw,
    reason_of,
)

NAME = "scaleway"
ENV_KEY: str | None = None
KEY_REQUIRED = False
URL = "https://api.scaleway.com/instance/v1/zones/{zone}/products/servers"
INTERVAL = timedelta(hours=1)  # availability per zone moves, each run pages through nine zones
ZONES = ("fr-par-1", "fr-par-2", "fr-par-3", "nl-ams-1", "nl-ams-2", "nl-ams-3",
         "pl-waw-1", "pl-waw-2", "pl-waw-3")  # fmt: skip
PER_PAGE = 100
MAX_PAGES = 50  # a bound, not a limit met in practice: ~10 pages would be 1,000 types
CURRENCY = "EUR"
BYTES_PER_GIB = 2**30  # gpu_memory 80 * 2**30 for an 80 GB board (gpu-index fixtures)
CAN_CREATE = frozenset({"available", "scarce"})
_ANSWER = re.compile(r"/zones/(?P<zone>[a-z0-9-]+)/products/servers(?P<avail>/availability)?$")


def _pages(client: httpx.Client, url: str, key: str) -> dict[str, Any] | None:
    """Every page of one listing merged, or None when the zone answers 404."""
    merged: dict[str, Any] = {}
    for page in range(1, MAX_PAGES + 1):
        try:
            body = fetch_bytes(client, "GET", f"{url}?per_page={PER_PAGE}&page={page}",
                               provider=NAME)  # fmt: skip
        except ProviderHTTPError as exc:
            cause = exc.__cause__
            if isinstance(cause, httpx.HTTPStatusError) and cause.response.status_code == 404:
                return None if page == 1 else merged
            raise
        entries = json_object_member(body, key, NAME, where=f"{url} page {page}")
        merged.update(entries)
        total = _total_count(body)
        if not entries or (total is not None and len(merged) >= total):
            break
    return merged


def _total_count(body: bytes) -> int | None:
    """The `total_count` a listing page states, or None when it states none."""
    total = orjson.loads(body).get("total_count")
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    zones: dict[str, Any] = {}
    for zone in ZONES:
        url = URL.format(zone=zone)
        servers = _pages(client, url, "servers")
        if servers is None:
            continue
        availability = _pages(client, f"{url}/availability", "servers") or {}
        zones[zone] = {"servers": servers, "availability": availability}
    return orjson.dumps({"zones": zones})


def replay_directory(directory: Path) -> Callable[[httpx.Request], httpx.Response]:
    """Answers from recorded files `servers-<zone>-<page>.json` and
    `availability-<zone>-<page>.json`; 404 for a zone or page without a file."""

    def answer(request: httpx.Request) -> httpx.Response:
        match = _ANSWER.search(request.url.path)
        if match is None:
            return httpx.Response(404)
        kind = "availability" if match["avail"] else "servers"
        page = request.url.params.get("page", "1")
        path = directory / f"{kind}-{match['zone']}-{page}.json"
        if not path.is_file():
            empty = page != "1" and (directory / f"{kind}-{match['zone']}-1.json").is_file()
            return httpx.Response(200, json={"servers": {}}) if empty else httpx.Response(404)
        return httpx.Response(200, content=path.read_bytes())

    return answer


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    zones = json_object_member(payload, "zones", NAME)  # the document fetch builds
    records = list(_records(zones))
    batch = OfferBatch(
        NAME, observed_at, raw_of=lambda i: json_raw(records[i][2]),
        id_of=lambda i: f"{records[i][1]}@{records[i][0]}",
    )  # fmt: skip
    for i, (zone, type_name, server, availability) in enumerate(records):
        try:
            batch.add(i, _offers_of(zone, type_name, server, availability))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _records(zones: dict[str, Any]) -> Iterator[tuple[str, Any, Any, Any]]:
    """(zone, type, server, availability) of every server type; a zone whose parts are not
    objects is one record (`type` None), rejected with the reason."""
    for zone, body in zones.items():
        servers = body.get("servers") if isinstance(body, dict) else body
        availability = body.get("availability") if isinstance(body, dict) else None
        if not isinstance(servers, dict) or not isinstance(availability, dict | None):
            yield zone, None, body, None
            continue
        for type_name, server in servers.items():
            yield zone, type_name, server, (availability or {}).get(type_name)


def _form_factor(type_name: str, gpu_name: str) -> FormFactor | None:
    for text in (gpu_name, type_name):
        upper = text.upper()
        if "SXM" in upper.split("-"):
            return FormFactor.SXM
        if "PCIE" in upper.split("-"):
            return FormFactor.PCIE
    return None


def _offers_of(
    zone: str, type_name: str | None, server: Any, availability: Any
) -> list[dict[str, Any]]:
    if type_name is None:
        raise TypeError(f"zone {zone}: servers or availability is not an object")
    if not isinstance(server, dict) or not isinstance(availability, dict | None):
        raise TypeError(f"{type_name}: its server or availability is not an object")
    if not server.get("gpu"):
        return []  # a CPU type: not a GPU offer
    info = server["gpu_info"]
    gpu_name = info["gpu_name"]
    memory = info.get("gpu_memory")
    state = (availability or {}).get("availability")
    return [
        {
            "offer_id": f"{type_name}@{zone}",
            "gpu_raw": gpu_name,
            "form_factor": _form_factor(type_name, gpu_name),
            "gpu_count": server["gpu"],
            "vram_gb": memory / BYTES_PER_GIB if memory else None,
            "pricing": Pricing.ON_DEMAND,
            "price_per_hour": server["hourly_price"],
            "currency": CURRENCY,
            "region": zone,
            "available": state in CAN_CREATE,
            "vcpus": server.get("ncpus"),
            "ram_gb": server["ram"] / BYTES_PER_GIB if server.get("ram") else None,
            "tier": "end_of_service" if server.get("end_of_service") else None,
        }
    ]
