"""A day of replayed runs: offers, history lines with a gap, and one stale provider.

Every provider's recorded body from `tests/fixtures/` is replayed hourly with its prices nudged a
little each hour (so the chart has lines that move). RunPod misses four runs (a gap in its lines)
and Vast.ai stops three hours before `now` (stale: its threshold is 3 × 10 min).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from pipeline.collection.collect import run_collection
from tests.conftest import FIXTURES
from warehouse import Warehouse

__all__ = ["FRESH_PROVIDERS", "HOURS", "RUNPOD_GAP_HOURS_AGO", "STALE_PROVIDER", "seed"]

FIXTURE_FILES: Mapping[str, str] = {
    "vastai": "vastai_bundles.json",
    "runpod": "runpod_gpu_types.json",
    "lambda": "lambda_instance_types.json",
    "coreweave": "coreweave_pricing.html",  # replayed as recorded: its cells must add up
}
PRICE_KEYS = frozenset(
    {
        "dph_base",
        "dph_total",
        "min_bid",
        "price_cents_per_hour",
        "securePrice",
        "communityPrice",
        "secureSpotPrice",
        "communitySpotPrice",
        "minimumBidPrice",
        "uninterruptablePrice",
    }
)
"""Price fields of the JSON bodies, scaled together so each body stays self-consistent."""
HOURS = 24
STALE_PROVIDER = "vastai"
STALE_SINCE_HOURS = 3
RUNPOD_GAP_HOURS_AGO = range(10, 14)
FRESH_PROVIDERS = ("runpod", "lambda", "coreweave")
LAST_RUN_AGO = timedelta(minutes=5)
WIGGLE = 0.06
"""Prices move within ±6% over the day."""


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, dict):
        return {
            k: (
                _scale_number(v, factor)
                if k in PRICE_KEYS and isinstance(v, int | float) and not isinstance(v, bool)
                else _scaled(v, factor)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scaled(v, factor) for v in value]
    return value


def _scale_number(value: float, factor: float) -> float:
    return round(value * factor) if isinstance(value, int) else round(value * factor, 4)


def _body(provider: str, factor: float, folder: Path, hours_ago: float) -> Path:
    source = FIXTURES / FIXTURE_FILES[provider]
    if source.suffix != ".json":
        return source
    target = folder / f"{provider}-{hours_ago:g}h.json"
    target.write_bytes(orjson.dumps(_scaled(orjson.loads(source.read_bytes()), factor)))
    return target


def _providers_at(hours_ago: float) -> list[str]:
    names = [
        name
        for name in FIXTURE_FILES
        if not (name == "runpod" and hours_ago in RUNPOD_GAP_HOURS_AGO)
        and not (name == STALE_PROVIDER and hours_ago < STALE_SINCE_HOURS)
    ]
    return names


def seed(warehouse: Warehouse, folder: Path, now: datetime) -> None:
    """Hourly runs for the last day, then one run of the fresh providers just before `now`."""
    folder.mkdir(parents=True, exist_ok=True)
    times = [(h, now - timedelta(hours=h)) for h in range(HOURS, 0, -1)]
    times.append((LAST_RUN_AGO.total_seconds() / 3600, now - LAST_RUN_AGO))
    for hours_ago, at in times:
        for index, name in enumerate(_providers_at(hours_ago)):
            factor = 1 + WIGGLE * math.sin(hours_ago / 3 + index * 1.7)
            run_collection(
                [name],
                warehouse,
                now=lambda at=at: at,
                replays={name: _body(name, factor, folder, hours_ago)},
                env={},
            )
