"""Fluidstack: the configurations in stock now (`GET /list_available_configurations`), key
required.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The key is the buyer's Fluidstack API key, read from `FLUIDSTACK_API_KEY`, sent in the
  `api-key` header (SkyPilot's `fetch_fluidstack.py` and `fluidstack_utils.py`; SkyPilot keeps the
  key in `~/.fluidstack/api_key`, Fluidstack names no variable). Errors are `{"error": ...}`.
- The body is a bare list of configurations `{gpu_type, gpu_counts[], price_per_gpu_hr,
  regions[]}`; it lists what can be launched now: SkyPilot's client refuses a type, count and
  region missing from it as "out of stock". So every listed (type, count, region) is an
  available offer; a configuration with no region is one unplaced offer per count, not
  available.
- `price_per_gpu_hr` is USD **per GPU**-hour: the instance of n GPUs costs n times it (the
  `A100_PCIE_80GB::8` row of SkyPilot's generated catalog: 8 x 1.8 = 14.4).
- `gpu_type` is one token with the form factor and memory (`A100_PCIE_80GB`, `H100_SXM5_80GB`,
  `H100_NVLINK_80GB`, `RTX_A6000_48GB`, `Tesla_V100_SXM2_16GB`): kept as the GPU name (the
  catalog reads underscores as spaces; `NVLINK` 80 GB parts are the SXM boards, catalog aliases),
  its last `<n>GB` as VRAM per GPU.
- vCPUs and RAM are not in the answer: SkyPilot fills them from a hand-written table of minimums;
  we leave them unknown rather than invent them. No spot.
- Regions are upper-case place names (`NORTH_DAKOTA_USA`, `GERMANY`, `FINLAND`; older answers
  `norway_4_eu`, `generic_1_canada`), placed by `data/fluidstack_regions.csv`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_with_key
from scrapers.batch import decimal, id_field, offers_of_records, whole
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing

NAME = "fluidstack"
ENV_KEY = "FLUIDSTACK_API_KEY"  # Fluidstack names no variable; ours, <PROVIDER>_API_KEY
KEY_REQUIRED = True  # the configurations answer only to an api-key header
URL = "https://platform.fluidstack.io/list_available_configurations"
INTERVAL = timedelta(minutes=15)  # what is in stock moves within the hour
CURRENCY = "USD"
_VRAM_GB = re.compile(r"_(\d+)GB$", re.IGNORECASE)
"""`gpu_type`'s memory per GPU: `H100_SXM5_80GB` → 80."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_with_key(
        client,
        URL,
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        header="api-key",
        scheme="",
        auth_hint=f"check {ENV_KEY} (a Fluidstack API key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        configurations = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    if not isinstance(configurations, list):
        error = configurations.get("error") if isinstance(configurations, dict) else None
        said = f" (it says: {str(error)[:200]})" if error else ""
        raise ProviderPayloadError(
            f"{NAME}: body is not a list of configurations at {URL}{said}; the answer changed "
            "shape, update scrapers/fluidstack.py"
        )
    return offers_of_records(
        NAME, observed_at, configurations, _offers_of, id_of=id_field("gpu_type")
    )


def _names(configuration: dict[str, Any], key: str) -> list[Any]:
    values = configuration[key]
    if not isinstance(values, list):
        raise TypeError(f"{key} is not a list: {values!r}")
    return values


def _offers_of(configuration: Any) -> list[dict[str, Any]]:
    if not isinstance(configuration, dict):
        raise TypeError(f"a configuration is not an object: {configuration!r}")
    gpu_type = configuration["gpu_type"]
    if not isinstance(gpu_type, str) or not gpu_type.strip():
        raise ValueError(f"gpu_type is not a non-empty string: {gpu_type!r}")
    counts = sorted({whole("gpu_counts", count) for count in _names(configuration, "gpu_counts")})
    if not counts:
        raise ValueError("gpu_counts is empty: no instance size is offered")
    regions = _names(configuration, "regions")
    if not all(isinstance(region, str) and region.strip() for region in regions):
        raise ValueError(f"regions has an entry that is not a name: {regions!r}")
    vram = _VRAM_GB.search(gpu_type)
    common = {
        "gpu_raw": gpu_type.strip(),
        "vram_gb": float(vram[1]) if vram else None,
        "pricing": Pricing.ON_DEMAND,
        "price_per_gpu_hour": decimal("price_per_gpu_hr", configuration["price_per_gpu_hr"]),
    }
    places = list(dict.fromkeys(region.strip() for region in regions)) or [None]
    return [
        {**common, "offer_id": f"{gpu_type.strip()}::{count}" + (f"@{region}" if region else ""),
         "gpu_count": count, "region": region, "available": region is not None}
        for count in counts
        for region in places
    ]  # fmt: skip
