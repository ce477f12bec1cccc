"""What `/offers` and `gpuprices offers` answer: offers plus the freshness of their providers.

`answer_offers` asks the warehouse (the CLI, exports, `as_of`). A serving process asks its
`OfferServer` instead: the one place current offers are served from, with one cache. It holds,
for the snapshots in force, each provider's status (read once per burst), the current offers in
memory (`warehouse.current.CurrentOffers`, which evaluates the same `OfferFilters` as the SQL
and is property-tested against it), and whatever the front end derives from them (serialised
pages), all dropped together when a provider's snapshot changes.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pipeline.market.freshness import (
    ProviderFreshness,
    provider_freshness,
    provider_status,
    rate_is_stale,
    within_max_age,
)
from pipeline.market.history import check_as_of, snapshots_as_of
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.settings import Settings
from warehouse import Warehouse
from warehouse.current import CurrentOffers

__all__ = ["OfferServer", "OffersAnswer", "answer_offers"]

T = TypeVar("T")

STATUS_TTL_S = 1.0
"""How long one read of the runs table serves a burst of requests. A run written through this
process's warehouse shows at once (`Warehouse.generation`); the TTL bounds how late a run
written by another process (a collector on the same lake) shows."""
DERIVED_KEPT = 512
"""Derived answers (e.g. serialised pages) kept per snapshot version, least recently used out."""


@dataclass(frozen=True, slots=True)
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
    offers: Callable[[OfferQuery], list[dict[str, Any]]] | None = None,
) -> OffersAnswer:
    """Offers now (or as of `query.as_of`), each marked stale with its provider.

    `max_age` leaves out providers whose snapshot is older than that; a provider whose last run
    failed still serves its last good snapshot, marked stale. `offers` answers the query
    (default: the warehouse).
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
    select = offers or (lambda q: current_offers(warehouse, q))
    stale = {f.provider for f in freshness if f.stale}
    rows = [
        {**row, "stale": row["provider"] in stale or rate_is_stale(row)} for row in select(query)
    ]
    drawn = {row["provider"] for row in rows} | set(providers)
    return OffersAnswer(
        offers=rows,
        providers=[f for f in freshness if f.provider in drawn or not providers],
    )


@dataclass(slots=True)
class _Snapshots:
    """What was read for one version of the snapshots in force."""

    status: list[dict[str, Any]]
    read_at: float
    generation: int
    copy: CurrentOffers | None = None
    derived: OrderedDict[Hashable, Any] | None = None

    @property
    def version(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((row["provider"], row["snapshot_run_id"]) for row in self.status)


class OfferServer:
    """Current offers for one serving process (see the module docstring)."""

    def __init__(self, warehouse: Warehouse, settings: Settings) -> None:
        self.warehouse = warehouse
        self.settings = settings
        self._lock = threading.Lock()
        self._held: _Snapshots | None = None

    def _fresh(self) -> _Snapshots | None:
        held = self._held
        if (
            held is not None
            and held.generation == self.warehouse.generation
            and time.monotonic() - held.read_at < STATUS_TTL_S
        ):
            return held
        return None

    def warm(self) -> bool:
        """Whether the status needs no read now."""
        return self._fresh() is not None

    def peek(self, key: Hashable) -> Any | None:
        """What `derived(key, ...)` holds for the snapshots in force, reading nothing; else None."""
        held = self._fresh()
        if held is None or held.derived is None:
            return None
        with self._lock:
            return held.derived.get(key)

    def _snapshots(self) -> _Snapshots:
        held = self._fresh()
        if held is not None:
            return held
        generation, read_at = self.warehouse.generation, time.monotonic()
        status = provider_status(self.warehouse)
        with self._lock:
            previous = self._held
            fresh = _Snapshots(status, read_at, generation)
            if previous is not None and previous.version == fresh.version:
                fresh.copy, fresh.derived = previous.copy, previous.derived  # same snapshots
            self._held = fresh
        return fresh

    def freshness(
        self, now: datetime, next_runs: Callable[[str], datetime | None] = lambda _name: None
    ) -> list[ProviderFreshness]:
        status = self._snapshots().status
        return provider_freshness(self.warehouse, self.settings, now, next_runs, status=status)

    def version(self) -> Hashable:
        """Names each provider's snapshot in force: equal versions, equal current offers."""
        return self._snapshots().version

    def offers(self, query: OfferQuery) -> list[dict[str, Any]]:
        """`current_offers(warehouse, query)`, from memory where the copy answers the filters."""
        filters = query.filters()
        if not CurrentOffers.answers(filters):
            return current_offers(self.warehouse, query)
        held = self._snapshots()
        copy = held.copy
        if copy is None:
            with self._lock:
                copy = held.copy
                if copy is None:
                    with self.warehouse.cursor() as cur:
                        copy = held.copy = CurrentOffers.load(cur, held.version)
        return copy.rows(filters)

    def answer(
        self,
        query: OfferQuery,
        now: datetime,
        freshness: Sequence[ProviderFreshness],
        max_age: timedelta | None = None,
    ) -> OffersAnswer:
        return answer_offers(
            self.warehouse, self.settings, query, now, freshness, max_age, offers=self.offers
        )

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept with the snapshots in force (recomputed once they change)."""
        held = self._snapshots()
        with self._lock:
            if held.derived is None:
                held.derived = OrderedDict()
            if key in held.derived:
                held.derived.move_to_end(key)
                return held.derived[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            held.derived[key] = value
            while len(held.derived) > DERIVED_KEPT:
                held.derived.popitem(last=False)
        return value
