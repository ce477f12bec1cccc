"""How fresh each provider's data is: observed when, stale or not, last run and its error."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pipeline.settings import Settings
from warehouse import Warehouse
from warehouse import queries as q

__all__ = [
    "ProviderFreshness",
    "cached_status",
    "provider_freshness",
    "provider_status",
    "snapshot_written",
]

STATUS_TTL_S = 1.0
"""How long one read of the runs table serves a burst of requests. A run written through this
process drops it at once (`snapshot_written`); the TTL bounds how late a run written by another
process (a collector on the same lake) shows."""


@dataclass(slots=True)
class _Status:
    rows: list[dict[str, Any]]
    read_at: float
    generation: int


_cache: weakref.WeakKeyDictionary[Warehouse, _Status] = weakref.WeakKeyDictionary()
_generations: weakref.WeakKeyDictionary[Warehouse, int] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def snapshot_written(warehouse: Warehouse) -> None:
    """Call after a transaction that wrote a run: the next read sees it."""
    with _lock:
        _generations[warehouse] = _generations.get(warehouse, 0) + 1
        _cache.pop(warehouse, None)


def cached_status(warehouse: Warehouse) -> list[dict[str, Any]] | None:
    """`provider_status` when it needs no read now, else None."""
    cached = _cache.get(warehouse)
    if cached is not None and time.monotonic() - cached.read_at < STATUS_TTL_S:
        return cached.rows
    return None


def provider_status(warehouse: Warehouse) -> list[dict[str, Any]]:
    """`warehouse.queries.provider_status`, read once per burst (see `STATUS_TTL_S`).

    The rows also say which snapshot each provider serves (`snapshot_run_id`): what is in
    `current_offers` changes exactly when they do.
    """
    with _lock:
        generation = _generations.get(warehouse, 0)
    rows = cached_status(warehouse)
    if rows is not None:
        return rows
    read_at = time.monotonic()
    with warehouse.cursor() as cur:
        rows = q.provider_status(cur)
    with _lock:
        if _generations.get(warehouse, 0) == generation:  # no run written while reading
            _cache[warehouse] = _Status(rows, read_at, generation)
    return rows


@dataclass(frozen=True, slots=True)
class ProviderFreshness:
    provider: str
    observed_at: datetime | None
    """When the snapshot now served was observed; None if the provider never succeeded."""
    age_seconds: float | None
    stale: bool
    """Older than `stale_after`, or the last run failed, or no good snapshot at all."""
    stale_after_seconds: float
    offer_count: int
    last_run_at: datetime | None
    last_status: str | None
    last_success_at: datetime | None
    last_error: str | None
    next_run_at: datetime | None = None
    interval_seconds: float | None = None


def provider_freshness(
    warehouse: Warehouse,
    settings: Settings,
    now: datetime,
    next_runs: Callable[[str], datetime | None] = lambda _name: None,
    providers: Sequence[str] | None = None,
) -> list[ProviderFreshness]:
    """Freshness of every enabled provider (and any other that has stored runs)."""
    rows = {row["provider"]: row for row in provider_status(warehouse)}
    names = list(dict.fromkeys([*(providers or settings.providers), *rows]))
    result = []
    for name in names:
        row = rows.get(name, {})
        observed_at = row.get("observed_at")
        threshold = settings.stale_threshold(name)
        age = (now - observed_at) if observed_at else None
        stale = (
            age is None
            or age > threshold
            or row.get("last_status") == "failed"
        )
        result.append(
            ProviderFreshness(
                provider=name,
                observed_at=observed_at,
                age_seconds=age.total_seconds() if age is not None else None,
                stale=stale,
                stale_after_seconds=threshold.total_seconds(),
                offer_count=int(row.get("offer_count") or 0),
                last_run_at=row.get("last_run_at"),
                last_status=row.get("last_status"),
                last_success_at=row.get("last_success_at"),
                last_error=row.get("last_error"),
                next_run_at=next_runs(name),
                interval_seconds=settings.interval(name).total_seconds(),
            )
        )
    return result


def within_max_age(freshness: Sequence[ProviderFreshness], max_age: timedelta) -> set[str]:
    """Providers whose served snapshot is no older than `max_age`."""
    return {
        f.provider
        for f in freshness
        if f.age_seconds is not None and f.age_seconds <= max_age.total_seconds()
    }
