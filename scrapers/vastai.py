"""Vast.ai: the public offer search (`POST /api/v0/bundles/`).

Quirks (see shared/provider-samples/README.md, "Vast.ai"):
- `dph_base` is USD per hour for the compute of the *whole offer* (all `num_gpus`); `dph_total`
  adds storage for `allocated_storage` GB. We publish `dph_base`: disk is billed separately at
  `storage_cost` USD per GB-month and depends on the disk size you pick (gpuhunt does the same).
- `min_bid` is the floor of an interruptible bid for the whole offer (vast-cli help; gpuhunt and
  SkyPilot use it as the spot price); `null` means no interruptible price.
- `gpu_ram` is MiB per GPU and irregular (24564 for a 24 GB card): divided by 1024 here, snapped
  to the catalog size later.
- `rented` is not filtered by the backend (vast-cli PR #394): a rented offer is listed,
  not available.
- No pagination: without `limit` only 64 offers come back (gpuhunt issue #142).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.errors import ProviderPayloadError
from scrapers.models import Offer, ParseResult, Pricing, Reject

NAME = "vastai"
ENV_KEY = "VASTAI_API_KEY"
KEY_REQUIRED = False  # gpuhunt searches without a key; a key only changes the rate-limit identity
URL = "https://console.vast.ai/api/v0/bundles/"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
MIB_PER_GIB = 1024
SEARCH_LIMIT = 10_000
SEARCH_BODY: dict[str, Any] = {
    "rentable": {"eq": True},
    "rented": {"eq": False},
    "type": "on-demand",
    "order": [["score", "desc"]],
    "limit": SEARCH_LIMIT,
}


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    headers = {"Accept": "application/json"}
    if creds is not None:
        headers["Authorization"] = f"Bearer {creds.api_key}"
    return fetch_bytes(
        client,
        "POST",
        URL,
        provider=NAME,
        timeout=TIMEOUT,
        headers=headers,
        json=SEARCH_BODY,
        auth_hint=f"check {ENV_KEY} or unset it (the search works without a key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    records = body.get("offers") if isinstance(body, dict) else None
    if not isinstance(records, list):
        raise ProviderPayloadError(f"{NAME}: body has no 'offers' list")

    result = ParseResult()
    for record in records:
        try:
            result.offers.extend(_offers_of(record, observed_at))
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            record_id = record.get("id") if isinstance(record, dict) else None
            result.rejects.append(
                Reject(
                    provider=NAME,
                    record_id=None if record_id is None else str(record_id),
                    reason=_reason(exc),
                    raw=orjson.dumps(record).decode(),
                )
            )
    return result


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc).replace("\n", "; ")


def _offers_of(record: dict[str, Any], observed_at: datetime) -> list[Offer]:
    gpu_count = int(record["num_gpus"])
    cpu_cores = record.get("cpu_cores")
    cores_effective = record.get("cpu_cores_effective")
    ram_gb = None
    if cpu_cores and cores_effective is not None and record.get("cpu_ram") is not None:
        # cpu_ram is the whole machine's MiB; an offer gets its share of the cores (gpuhunt).
        ram_gb = record["cpu_ram"] * (cores_effective / cpu_cores) / MIB_PER_GIB
    common: dict[str, Any] = {
        "provider": NAME,
        "offer_id": str(record["id"]),
        "gpu_raw": record["gpu_name"],
        "gpu_count": gpu_count,
        "vram_gb": record["gpu_ram"] / MIB_PER_GIB,
        "region": record.get("geolocation"),
        "available": bool(record.get("rentable", True)) and not record.get("rented", False),
        "observed_at": observed_at,
        "vcpus": cores_effective,
        "ram_gb": ram_gb,
        "disk_gb": record.get("disk_space"),
        "verified": record.get("verification") == "verified",
        "reliability": record.get("reliability2", record.get("reliability")),
    }
    offers = [
        Offer.from_instance_price(
            price_per_hour=float(record["dph_base"]), pricing=Pricing.ON_DEMAND, **common
        )
    ]
    min_bid = record.get("min_bid")
    if min_bid:
        offers.append(
            Offer.from_instance_price(price_per_hour=float(min_bid), pricing=Pricing.SPOT, **common)
        )
    return offers
