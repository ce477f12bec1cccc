"""What `/offers` and `gpuprices offers` answer: offers plus the freshness of their providers.

`answer_offers` asks the warehouse (the CLI, exports, `as_of`). A serving process asks its
`OfferServer` instead: the one place current offers are served from, with one cache. It holds,
for the snapshots in force, each provider's status (read once per burst), the current offers in
memory (`warehouse.current.CurrentOffers`, which evaluates the same `OfferFilters` as the SQL
and is property-tested against it), every offer's JSON as the front end writes it (made once,
off the event loop, when the copy is read: `encoded`), and whatever the front end derives from
them (serialised pages), all dropped together when a provider's snapshot changes. A new
question is then a selection over NumPy arrays plus a join of bytes already made.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from pipeline.market.freshness import (
    ProviderFreshness,
    provider_freshness,
    provider_status,
    rate_is_stale,
    stored_rate_dates,
    within_max_age,
)
from pipeline.market.history import check_as_of, snapshots_as_of
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.market.written import (
    EncodedAnswer,
    RowEncoder,
    WrittenCopy,
    unwritten_copy,
    write_copy,
)
from pipeline.settings import Settings
from warehouse import OfferFilters, Warehouse
from warehouse.current import CurrentOffers

__all__ = ["OfferServer", "OffersAnswer", "answer_offers", "reported_providers"]

T = TypeVar("T")

STATUS_TTL_S = 1.0
"""How long one read of the runs table serves a burst of requests. A run written through this
process's warehouse shows at once (`Warehouse.generation`); the TTL bounds how late a run
written by another process (a collector on the same lake) shows."""
DERIVED_KEPT = 512
"""Derived answers (e.g. serialised pages) kept per snapshot version, least recently used out."""
PAST_COPY_ROWS = 10_000
"""`as_of`: the snapshots of a past time, when they hold at most this many offers in all, are
answered from an in-memory copy like current offers (history does not change: a copy stays
true); larger ones are asked of the warehouse, which reads only the page asked for."""
PAST_ROWS_KEPT = 25_000
"""Offers kept in past copies in all, least recently asked out (~2.4 KB each with their JSON:
about 60 MB at most)."""


@dataclass(frozen=True, slots=True)
class OffersAnswer:
    offers: list[dict[str, Any]]
    providers: list[ProviderFreshness]


def _within_max_age(
    query: OfferQuery, freshness: Sequence[ProviderFreshness], max_age: timedelta | None
) -> OfferQuery | None:
    """`query` limited to providers whose snapshot is at most `max_age` old (None: none is)."""
    if max_age is None:
        return query
    wanted = set(query.providers) if query.providers else {f.provider for f in freshness}
    providers = tuple(sorted(wanted & within_max_age(freshness, max_age)))
    return query.model_copy(update={"providers": providers}) if providers else None


def reported_providers(
    freshness: Sequence[ProviderFreshness], asked: Sequence[str]
) -> list[ProviderFreshness]:
    """The providers an answer reports on: those asked for, else all (an answer's offers are
    all of the providers asked for, when any are)."""
    return [f for f in freshness if not asked or f.provider in asked]


def _as_of_freshness(
    settings: Settings, as_of: datetime, snapshots: list[dict[str, Any]]
) -> list[ProviderFreshness]:
    result = []
    for snap in snapshots:
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
    select = offers or (lambda q: current_offers(warehouse, q))
    if query.as_of is not None:  # each provider's snapshot then, found once for both uses
        check_as_of(query.as_of, now, settings.retention)
        snapshots = snapshots_as_of(warehouse, query.as_of)
        freshness = _as_of_freshness(settings, query.as_of, snapshots)
        runs = [(snap["run_id"], snap["observed_at"]) for snap in snapshots]
        select = lambda q: current_offers(warehouse, q, snapshots=runs)  # noqa: E731
    restricted = _within_max_age(query, freshness, max_age)
    if restricted is None:
        return OffersAnswer(offers=[], providers=[])
    stale = {f.provider for f in freshness if f.stale}
    rows = select(restricted)
    for row in rows:  # fresh dicts, ours to mark
        row["stale"] = row["provider"] in stale or rate_is_stale(row)
    return OffersAnswer(offers=rows, providers=reported_providers(freshness, restricted.providers))


@dataclass(slots=True)
class _Snapshots:
    """What was read for one version of the snapshots in force."""

    status: list[dict[str, Any]]
    rate_dates: dict[str, date]
    read_at: float
    generation: int
    copy: CurrentOffers | None = None
    encoded: WrittenCopy | None = None
    derived: OrderedDict[Hashable, Any] | None = None
    freshness: tuple[datetime, list[ProviderFreshness]] | None = None
    """The last freshness made from this read, and for which second."""

    @property
    def version(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((row["provider"], row["snapshot_run_id"]) for row in self.status)


class OfferServer:
    """Current offers for one serving process (see the module docstring)."""

    def __init__(self, warehouse: Warehouse, settings: Settings) -> None:
        self.warehouse = warehouse
        self.settings = settings
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._held: _Snapshots | None = None
        self._writing = threading.Lock()
        self._past: OrderedDict[tuple[str, ...], tuple[CurrentOffers, WrittenCopy]] = OrderedDict()

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

    def ready(self, encoder: RowEncoder) -> bool:
        """Whether the snapshots in force are read, held in memory and written by `encoder`:
        a question is then a selection over arrays and a join of bytes, nothing more."""
        return self._ready(encoder) is not None

    def _ready(self, encoder: RowEncoder) -> tuple[CurrentOffers, WrittenCopy] | None:
        """The copy in force and its JSON by `encoder`, where both are made; reads nothing."""
        held = self._fresh()
        if held is None or held.copy is None or held.encoded is None:
            return None
        return (held.copy, held.encoded) if held.encoded.encoder is encoder else None

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
        with self._reading:  # one read per burst: the others wait for it
            held = self._fresh()
            if held is not None:
                return held
            return self._read()

    def _read(self) -> _Snapshots:
        generation, read_at = self.warehouse.generation, time.monotonic()
        status, rate_dates = provider_status(self.warehouse), stored_rate_dates(self.warehouse)
        with self._lock:
            previous = self._held
            fresh = _Snapshots(status, rate_dates, read_at, generation)
            if previous is not None and previous.version == fresh.version:
                fresh.copy, fresh.derived = previous.copy, previous.derived  # same snapshots
                fresh.encoded = previous.encoded
            self._held = fresh
        return fresh

    def freshness(
        self, now: datetime, next_runs: Callable[[str], datetime | None] = lambda _name: None
    ) -> list[ProviderFreshness]:
        """Each provider's freshness at `now`, from the runs read for this burst: made once a
        second (ages and next runs as of the first ask in that second)."""
        held = self._snapshots()
        key = now.replace(microsecond=0)
        made = held.freshness
        if made is not None and made[0] == key:
            return made[1]
        result = provider_freshness(
            self.warehouse, self.settings, now, next_runs, status=held.status,
            rate_dates=held.rate_dates,
        )  # fmt: skip
        held.freshness = (key, result)
        return result

    def version(self) -> Hashable:
        """Names each provider's snapshot in force: equal versions, equal current offers."""
        return self._snapshots().version

    def _copy(self, held: _Snapshots, filters: OfferFilters) -> CurrentOffers:
        copy = held.copy
        if copy is None:
            with self._lock:
                copy = held.copy
                if copy is None:
                    with self.warehouse.cursor() as cur:
                        copy = CurrentOffers.load(cur, held.version, filters.gpu_figures)
                    held.copy = copy
        return copy

    def _encoded(self, held: _Snapshots, copy: CurrentOffers, encoder: RowEncoder) -> WrittenCopy:
        """Every offer of `copy` as `encoder` writes it: made once per copy (off the event
        loop: the first question after a snapshot changes waits for it)."""
        made = held.encoded
        if made is None or made.encoder is not encoder:
            with self._lock:
                made = held.encoded
                if made is None or made.encoder is not encoder:
                    made = write_copy(copy, encoder)
                    held.encoded = made
        return made

    def offers(self, query: OfferQuery) -> list[dict[str, Any]]:
        """`current_offers(warehouse, query)`, from memory where the copy answers the filters."""
        filters = query.filters()
        if not CurrentOffers.answers(filters):
            return current_offers(self.warehouse, query)
        return self._copy(self._snapshots(), filters).rows(filters)

    def encoded(
        self,
        query: OfferQuery,
        freshness: Sequence[ProviderFreshness],
        encoder: RowEncoder,
        max_age: timedelta | None = None,
        *,
        ready_only: bool = False,
        now: datetime | None = None,
    ) -> EncodedAnswer | None:
        """The answer of `answer` with its offers as `encoder` writes them, each written once
        per snapshot; None where the in-memory copy does not answer the filters (`as_of`,
        `region`). With `ready_only`, None also unless the copy and its JSON are made for the
        snapshots in force: nothing is read or made (what the event loop may ask). An `as_of`
        question (given `now`) is answered from a copy of that time's snapshots when they are
        small (`PAST_COPY_ROWS`), made once and kept (`PAST_ROWS_KEPT`)."""
        past = query.as_of is not None
        if query.region is not None or (past and (now is None or ready_only)):
            return None
        if past:
            check_as_of(query.as_of, now, self.settings.retention)
            snapshots = snapshots_as_of(self.warehouse, query.as_of)
            if sum(snap["offer_count"] for snap in snapshots) > PAST_COPY_ROWS:
                return None
            freshness = _as_of_freshness(self.settings, query.as_of, snapshots)
        restricted = _within_max_age(query, freshness, max_age)
        if restricted is None:
            return EncodedAnswer.empty(encoder)
        filters = restricted.filters()
        if past:
            copy, made = self._past_copy(snapshots, query.as_of, filters, encoder)
            filters = replace(filters, as_of=None)  # the copy is that time's
        elif ready_only:
            ready = self._ready(encoder)
            if ready is None:
                return None
            copy, made = ready
        else:
            held = self._snapshots()
            copy = self._copy(held, filters)
            made = self._encoded(held, copy, encoder)
        positions = copy.select(filters)
        if past:
            with self._writing:
                made.write_missing(copy, positions)
        stale_providers = frozenset(f.provider for f in freshness if f.stale)
        codes, names = copy.codes("provider")
        stale: npt.NDArray[np.bool_] | bool = False  # none is, unless a provider or rate is
        if stale_providers.issuperset(names):
            stale = bool(stale_providers)  # every provider of the copy is (if it has any)
        elif stale_providers or made.any_rate_stale:
            provider_stale = made.stale_of_providers.get(stale_providers)
            if provider_stale is None:  # by provider code (the last: none), for this stale set
                provider_stale = np.array([n in stale_providers for n in names] + [False])
                made.stale_of_providers[stale_providers] = provider_stale
            stale = provider_stale[codes[positions]] | made.rate_stale[positions]
        providers = reported_providers(freshness, restricted.providers)
        return EncodedAnswer(providers, made, positions, stale)

    def _past_copy(
        self,
        snapshots: list[dict[str, Any]],
        as_of: datetime,
        filters: OfferFilters,
        encoder: RowEncoder,
    ) -> tuple[CurrentOffers, WrittenCopy]:
        """The copy of these snapshots (each provider's as of `as_of`) and its JSON."""
        key = tuple(sorted(snap["run_id"] for snap in snapshots))
        with self._lock:
            kept = self._past.get(key)
            if kept is not None:
                self._past.move_to_end(key)
                if kept[1].encoder is encoder:
                    return kept
        if kept is not None:
            copy = kept[0]  # another front end's JSON: the same offers, written anew
        else:
            runs = [(snap["run_id"], snap["observed_at"]) for snap in snapshots]
            with self.warehouse.cursor() as cur:
                copy = CurrentOffers.load(cur, key, filters.gpu_figures, past=(runs, as_of))
        made = unwritten_copy(copy, encoder)  # written as questions ask for offers
        with self._lock:
            self._past[key] = (copy, made)
            while sum(c.size for c, _ in self._past.values()) > PAST_ROWS_KEPT:
                self._past.popitem(last=False)
        return copy, made

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
