"""Daytona: the public GPU rate card (`GET https://billing.app.daytona.io/gpu-pricing`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- No key: SkyPilot's `fetch_daytona.py` ("no authentication required") and gpuhunt's
  `providers/daytona.py` ("public rate card") read it anonymously. The answer is an object:
  `gpus[]` (`type`, `onDemandPricePerHour`, `spotPricePerHour`, per-second twins), `resources`
  (`onDemand` / `spot`: `vcpuPerHour`, `memoryGiBPerHour`, `diskGiBPerHour`), `currency`,
  `generatedAt`, `notes` ("GPU rates are per GPU. Sandbox vCPU, memory, and disk are billed
  separately.").
- Daytona sells no fixed instance: a GPU sandbox is billed per GPU plus per vCPU, per GiB of
  memory and per GiB of disk. **How a node's price is built here**: for `n` GPUs (n in
  `GPU_COUNTS`, gpuhunt's 1, 2, 4, 8), `n × GPU rate + 8n vCPUs × vcpuPerHour + m·n GiB ×
  memoryGiBPerHour + 256n GiB × diskGiBPerHour`, with m = 100 GiB per datacenter GPU and 50 per
  consumer card (RTX 4090/5090): the representative shape both peers use (SkyPilot leaves the
  disk out; gpuhunt adds 256 GiB per GPU, and so do we: a sandbox cannot run without one). The
  spot node prices the GPU *and* the resources at the spot rates (discounted independently).
  The price is quoted per instance; the per-GPU price is derived, so it includes that GPU's
  share of vCPUs, memory and disk, not the bare GPU rate.
- The card names GPU types only (`H100`, `RTX-PRO-6000`, `MI355X`); the VRAM per GPU is the
  peers' (`VRAM_GB`), which tells `H100` (80 GB) from the 94 GB NVL.
- A GPU type whose spot rate is missing or null has on-demand nodes only. B200 is on the card
  ahead of launch (SkyPilot leaves it out as not yet orderable; gpuhunt keeps it): listed as
  served.
- A rate card shows no stock (capacity needs a key): `LISTED_ONLY`, and each offer is
  "available" only in the sense of listed at a price. GPU sandboxes run in a shared fleet whose
  place the card does not state (SkyPilot calls it `earth`, gpuhunt publishes `us` without a
  source): no region, unplaced (`data/daytona_regions.csv` says so).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import id_field, number, offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing

NAME = "daytona"
ENV_KEY = None
KEY_REQUIRED = False  # the public rate card (SkyPilot: "no authentication required")
URL = "https://billing.app.daytona.io/gpu-pricing"
INTERVAL = timedelta(hours=6)  # a rate card: changes with a price list, not with stock
CURRENCY = "USD"  # the card states `currency`; an offer carries the card's own
LISTED_ONLY = True  # a rate card: listed at a price, no stock shown
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source

GPU_COUNTS = (1, 2, 4, 8)
"""GPUs per node built (gpuhunt's `GPU_COUNTS`; SkyPilot builds every count from 1 to 8)."""
VCPUS_PER_GPU = 8  # both peers' representative sandbox shape
MEMORY_GIB_PER_GPU = 100  # datacenter GPUs (both peers)
CONSUMER_MEMORY_GIB_PER_GPU = 50  # consumer cards (both peers)
CONSUMER_GPUS = frozenset({"RTX-4090", "RTX-5090"})
VRAM_GB = {"B300": 288, "B200": 180, "H200": 141, "H100": 80, "RTX-PRO-6000": 96, "RTX-5090": 32,
           "RTX-4090": 24, "MI355X": 288}  # fmt: skip
"""GB per GPU of each type, which the card does not state (SkyPilot's and gpuhunt's GPU maps):
`H100` alone would leave the 80 GB and the 94 GB part apart. Another type keeps none."""
DISK_GIB_PER_GPU = 256  # gpuhunt's DISK_PER_GPU; SkyPilot bills none into the price
RATES = {Pricing.ON_DEMAND: ("onDemandPricePerHour", "onDemand"),
         Pricing.SPOT: ("spotPricePerHour", "spot")}  # fmt: skip
"""Our pricing → (the GPU's rate field, the resources block)."""
RESOURCE_RATES = ("vcpuPerHour", "memoryGiBPerHour", "diskGiBPerHour")


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        auth_hint="the public GPU rate card refused a request without a key; it may need one",
    )


def _resources(body: dict[str, Any]) -> dict[Pricing, dict[str, float]]:
    """The per-vCPU, per-GiB memory and per-GiB disk rates by pricing; every offer uses them,
    so a missing or malformed block fails the whole answer."""
    resources = body.get("resources")
    rates: dict[Pricing, dict[str, float]] = {}
    for pricing, (_, block_name) in RATES.items():
        block = resources.get(block_name) if isinstance(resources, dict) else None
        values = {k: block.get(k) for k in RESOURCE_RATES} if isinstance(block, dict) else {}
        numbers = {
            k: float(v)
            for k, v in values.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
        }
        if len(numbers) != len(RESOURCE_RATES):
            raise ProviderPayloadError(
                f"{NAME}: resources.{block_name} does not give {', '.join(RESOURCE_RATES)} as "
                f"numbers ({block!r}); every node's price needs them, update scrapers/daytona.py"
            )
        rates[pricing] = numbers
    return rates


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(
            f"{NAME}: body is not JSON with gpus and resources ({exc})"
        ) from exc
    if not isinstance(body, dict) or not isinstance(body.get("gpus"), list):
        raise ProviderPayloadError(f"{NAME}: body has no 'gpus' list at {URL}")
    resources = _resources(body)
    currency = body.get("currency") or CURRENCY
    if not isinstance(currency, str):
        raise ProviderPayloadError(f"{NAME}: currency is not a code: {currency!r}")
    return offers_of_records(
        NAME,
        observed_at,
        body["gpus"],
        lambda gpu: _offers_of(gpu, resources, currency.strip().upper()),
        id_of=id_field("type"),
    )


def node_price(gpu_rate: float, rates: dict[str, float], gpus: int, memory_gib: float) -> float:
    """One node's hourly price: its GPUs, vCPUs, memory and disk at their rates."""
    return (
        gpus * gpu_rate
        + gpus * VCPUS_PER_GPU * rates["vcpuPerHour"]
        + gpus * memory_gib * rates["memoryGiBPerHour"]
        + gpus * DISK_GIB_PER_GPU * rates["diskGiBPerHour"]
    )


def _offers_of(
    gpu: Any, resources: dict[Pricing, dict[str, float]], currency: str
) -> list[dict[str, Any]]:
    if not isinstance(gpu, dict):
        raise TypeError(f"a GPU entry is not an object: {gpu!r}")
    kind = gpu["type"]
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError(f"type is not a GPU name: {kind!r}")
    kind = kind.strip()
    memory = CONSUMER_MEMORY_GIB_PER_GPU if kind in CONSUMER_GPUS else MEMORY_GIB_PER_GPU
    offers = []
    for pricing, (rate_field, _) in RATES.items():
        if pricing is Pricing.ON_DEMAND:
            rate = number(rate_field, gpu[rate_field])
            if rate is None:
                raise ValueError(f"{rate_field} is null")
        else:
            rate = number(rate_field, gpu.get(rate_field))
            if rate is None:
                continue  # no spot rate: on-demand nodes only
        if rate <= 0:  # the resources would hide it in a positive node price
            raise ValueError(f"{rate_field} {rate:g}: a GPU rate must be positive")
        for count in GPU_COUNTS:
            offers.append({
                "offer_id": f"{count}x-{kind}",
                "gpu_raw": kind,
                "gpu_count": count,
                "vram_gb": VRAM_GB.get(kind),
                "pricing": pricing,
                "price_per_hour": round(node_price(rate, resources[pricing], count, memory), 6),
                "currency": currency,
                "vcpus": count * VCPUS_PER_GPU,
                "ram_gb": count * memory,
                "disk_gb": count * DISK_GIB_PER_GPU,
                "region": None,
                "available": True,  # listed at a price (LISTED_ONLY), not stock
                "tier": "sandbox",
            })  # fmt: skip
    return offers
