"""What `/offers` and `gpuprices offers` answer: offers plus the freshness of their providers."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pipeline.freshness import ProviderFreshness, within_max_age
from pipeline.history import check_as_of, snapshots_as_of
from pipeline.offers import OfferQuery, current_offers
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["OffersAnswer", "answer_offers"]


@dataclasses.dataclass(frozen=True, slots=True)
class OffersAnswer:
    offers: list[dict[str, Any]]
    providers: list[ProviderFreshness]


def _as_of_freshness(
    warehouse: Warehouse, settings: Settings, as_of: datetime
) -> list[ProviderFreshness]:
    result = []
    for snap in snapshots_as_of(warehouse, as_of):
        age = as_of - snap["observed_at"]
        threshold = settings.stale_threshold(snap["provider"])
        result.append(
            ProviderFreshness(
                provider=snap["provider"],
                observed_at=snap["observed_at"],
                age_seconds=age.total_seconds(),
                stale=age > threshold,
                stale_after_seconds=threshold.total_seconds(),
                offer_count=snap["offer_count"],
                last_run_at=None,
                last_status="ok",
                last_success_at=None,
                last_error=None,
            )
        )
    return result


def answer_offers(
    warehouse: Warehouse,
    settings: Settings,
    query: OfferQuery,
    now: datetime,
    freshness: Sequence[ProviderFreshness],
    max_age: timedelta | None = None,
) -> OffersAnswer:
    """Offers now (or as of `query.as_of`), each marked stale with its provider.

    `max_age` leaves out providers whose snapshot is older than that; a provider whose last run
    failed still serves its last good snapshot, marked stale.
    """
    if query.as_of is not None:
        check_as_of(query.as_of, now, settings.retention)
        freshness = _as_of_freshness(warehouse, settings, query.as_of)
    providers = tuple(query.providers)
    if max_age is not None:
        wanted = set(providers) if providers else {f.provider for f in freshness}
        providers = tuple(sorted(wanted & within_max_age(freshness, max_age)))
        if not providers:
            return OffersAnswer(offers=[], providers=[])
        query = query.model_copy(update={"providers": providers})
    stale = {f.provider for f in freshness if f.stale}
    rows = [{**row, "stale": row["provider"] in stale} for row in current_offers(warehouse, query)]
    drawn = {row["provider"] for row in rows} | set(providers)
    return OffersAnswer(
        offers=rows,
        providers=[f for f in freshness if f.provider in drawn or not providers],
    )
