"""How fresh each provider's data is: observed when, stale or not, last run and its error."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.settings import Settings
from scrapers import RATE_SOURCES
from warehouse import Warehouse
from warehouse import queries as q
from warehouse.rates import latest_rate_dates

__all__ = [
    "ProviderFreshness",
    "provider_freshness",
    "provider_status",
    "stale_marks",
    "stored_rate_dates",
]

MAX_RATE_AGE = timedelta(days=7)
"""An offer converted with an exchange rate older than this (before its observation) is stale."""


def stale_marks(offers: pa.Table, stale_providers: Collection[str]) -> npt.NDArray[np.bool_]:
    """Whether each offer of `offers` (its `provider`, `fx_date` and `observed_at` columns) is
    stale: its provider's snapshot is, or it was converted to USD with a rate over
    `MAX_RATE_AGE` older than its observation."""
    if not offers.num_rows:
        return np.zeros(0, np.bool_)
    observed_on = pc.cast(pc.cast(offers["observed_at"], pa.timestamp("us")), pa.date32())
    days = pc.days_between(offers["fx_date"], observed_on)
    stale = pc.fill_null(pc.greater(days, MAX_RATE_AGE.days), False)
    if stale_providers:
        of_provider = pc.is_in(offers["provider"], pa.array(sorted(stale_providers), pa.string()))
        stale = pc.or_(stale, pc.fill_null(of_provider, False))
    return np.asarray(stale.to_numpy(zero_copy_only=False), dtype=np.bool_)


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
    kind: str = "offers"
    """`rates` for a rate source (the ECB): it stores exchange rates, never offers."""
    last_rate_date: date | None = None


def provider_status(warehouse: Warehouse) -> list[dict[str, Any]]:
    """Per provider: its last run and the snapshot it serves (`snapshot_run_id`)."""
    with warehouse.cursor() as cur:
        return q.provider_status(cur)


def stored_rate_dates(warehouse: Warehouse) -> dict[str, date]:
    """Per rate source (the ECB), the date of its newest stored rate."""
    with warehouse.cursor() as cur:
        return latest_rate_dates(cur)


def provider_freshness(
    warehouse: Warehouse,
    settings: Settings,
    now: datetime,
    next_runs: Callable[[str], datetime | None] = lambda _name: None,
    providers: Sequence[str] | None = None,
    status: list[dict[str, Any]] | None = None,
    rate_dates: dict[str, date] | None = None,
) -> list[ProviderFreshness]:
    """Freshness of every enabled provider (and any other that has stored runs), from `status`
    (`provider_status` rows) and `rate_dates` (`stored_rate_dates`) when the caller holds them."""
    rows = {row["provider"]: row for row in status or provider_status(warehouse)}
    if rate_dates is None:
        rate_dates = stored_rate_dates(warehouse)
    names = list(dict.fromkeys([*(providers or settings.providers), *rows]))
    result = []
    for name in names:
        row = rows.get(name, {})
        observed_at = row.get("observed_at")
        threshold = settings.stale_threshold(name)
        age = (now - observed_at) if observed_at else None
        stale = age is None or age > threshold or row.get("last_status") == "failed"
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
                kind="rates" if name in RATE_SOURCES else "offers",
                last_rate_date=rate_dates.get(name),
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
