"""What `/offers` and `gpuprices offers` answer: offers plus the freshness of their providers.

`answer_offers` asks the warehouse (the CLI, the page, exports). A serving process asks its
`OfferServer` instead: the one place current offers are served from. It holds, for the
snapshots in force, each provider's status (read once per burst) and the current offers in
memory (`warehouse.current.CurrentOffers`, which evaluates the same `OfferFilters` as the SQL),
dropped together when a provider's snapshot changes; and copies of small past snapshots for
`as_of`, bounded in bytes. A new question is a selection over NumPy arrays. An answer is offers,
never bytes: positions in a copy (or rows the warehouse returned) and whether each is stale;
`api/` writes them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from pipeline.market.freshness import (
    ProviderFreshness,
    provider_freshness,
    provider_status,
    stale_marks,
    stored_rate_dates,
    within_max_age,
)
from pipeline.market.history import check_as_of, snapshots_as_of
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.settings import Settings
from warehouse import OfferFilters, Warehouse
from warehouse.current import CurrentOffers, Positions

__all__ = ["OfferServer", "OffersAnswer", "answer_offers", "reported_providers"]

STATUS_TTL_S = 1.0
"""How long one read of the runs table serves a burst of requests. A run written through this
process's warehouse shows at once (`Warehouse.generation`); the TTL bounds how late a run
written by another process (a collector on the same lake) shows."""
PAST_COPY_ROWS = 10_000
"""`as_of`: the snapshots of a past time, when they hold at most this many offers in all, are
answered from an in-memory copy like current offers (history does not change: a copy stays
true); larger ones are asked of the warehouse, which reads only the page asked for."""
MIB = 1024 * 1024
PAST_SHARE = 1 / 16
"""Of `Settings.memory_budget_mb`: the bytes of past copies kept in all (`CurrentOffers.nbytes`:
tables, columns, derived answers and offers written), least recently asked out."""
DERIVED_SHARE = 1 / 16
"""Of the budget: the derived answers each copy keeps (`warehouse.current.DERIVED_BYTES_KEPT`).
Needed at this size for speed: at 1/64 a 100,000-offer copy's sort orders and GPU groups no longer
fit and are made again per question (`bench/load.py`'s unique questions then miss their target)."""


@dataclass(frozen=True, slots=True)
class OffersAnswer:
    """An answer's offers in order, as positions in an in-memory copy (`copy`, `positions`)
    or as rows the warehouse returned (`rows`), whether each is stale (`stale`), and the
    providers it reports on."""

    providers: list[ProviderFreshness]
    stale: npt.NDArray[np.bool_]
    copy: CurrentOffers | None = None
    positions: Positions | None = None
    rows: list[dict[str, Any]] | None = None

    @property
    def count(self) -> int:
        return len(self.stale)

    @property
    def offers(self) -> list[dict[str, Any]]:
        """Each offer as a row, with its `stale` mark."""
        if self.rows is not None:
            rows = self.rows
        elif self.copy is not None and self.positions is not None:
            rows = self.copy.rows_at(self.positions)
        else:
            rows = []
        return [{**row, "stale": s} for row, s in zip(rows, self.stale.tolist(), strict=True)]


_NONE = OffersAnswer([], np.zeros(0, np.bool_))
_MARKED = pa.schema(
    [
        ("provider", pa.string()),
        ("fx_date", pa.date32()),
        ("observed_at", pa.timestamp("us", "UTC")),
    ]
)
"""The columns an offer's stale mark is made from (`stale_marks`)."""
_MARKED_COLUMNS = _MARKED.names


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
) -> OffersAnswer:
    """Offers now (or as of `query.as_of`), asked of the warehouse, each marked stale with its
    provider.

    `max_age` leaves out providers whose snapshot is older than that; a provider whose last run
    failed still serves its last good snapshot, marked stale.
    """
    snapshots = None
    if query.as_of is not None:  # each provider's snapshot then, found once for both uses
        check_as_of(query.as_of, now, settings.retention)
        found = snapshots_as_of(warehouse, query.as_of)
        freshness = _as_of_freshness(settings, query.as_of, found)
        snapshots = [(snap["run_id"], snap["observed_at"]) for snap in found]
    restricted = _within_max_age(query, freshness, max_age)
    if restricted is None:
        return _NONE
    rows = current_offers(warehouse, restricted, snapshots=snapshots)
    marked = pa.Table.from_pylist([{k: row[k] for k in _MARKED_COLUMNS} for row in rows], _MARKED)
    stale = stale_marks(marked, {f.provider for f in freshness if f.stale})
    return OffersAnswer(reported_providers(freshness, restricted.providers), stale, rows=rows)


@dataclass(slots=True)
class _Snapshots:
    """What was read for one version of the snapshots in force."""

    status: list[dict[str, Any]]
    rate_dates: dict[str, date]
    read_at: float
    generation: int
    copy: CurrentOffers | None = None
    marks: tuple[frozenset[str], npt.NDArray[np.bool_]] | None = None
    """Every offer's stale mark in the copy, and for which stale providers."""
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
        self._past: OrderedDict[tuple[str, ...], CurrentOffers] = OrderedDict()
        budget = settings.memory_budget_mb * MIB
        self.past_bytes_kept = int(budget * PAST_SHARE)
        self.derived_bytes_kept = int(budget * DERIVED_SHARE)

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
                fresh.copy, fresh.marks = previous.copy, previous.marks  # the same offers
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

    def version(self) -> tuple[tuple[str, str | None], ...]:
        """Names each provider's snapshot in force: equal versions, equal current offers."""
        return self._snapshots().version

    def _copy(self, held: _Snapshots, filters: OfferFilters) -> CurrentOffers:
        copy = held.copy
        if copy is None:
            with self._lock:
                copy = held.copy
                if copy is None:
                    with self.warehouse.cursor() as cur:
                        copy = CurrentOffers.load(
                            cur, held.version, filters.gpu_figures,
                            derived_bytes=self.derived_bytes_kept,
                        )  # fmt: skip
                    held.copy = copy
        return copy

    def gpus_offered(self) -> set[str]:
        """The GPU ids with an offer in the snapshots in force, available or not."""
        _, names = self._copy(self._snapshots(), OfferQuery().filters()).codes("gpu")
        return set(names)

    def offers(self, query: OfferQuery) -> list[dict[str, Any]]:
        """`current_offers(warehouse, query)`, from memory where the copy answers the filters."""
        filters = query.filters()
        if not CurrentOffers.answers(filters):
            return current_offers(self.warehouse, query)
        return self._copy(self._snapshots(), filters).rows(filters)

    def answer(
        self,
        query: OfferQuery,
        now: datetime,
        freshness: Sequence[ProviderFreshness],
        max_age: timedelta | None = None,
        *,
        ready_only: bool = False,
    ) -> OffersAnswer | None:
        """`answer_offers`, from the in-memory copy of the snapshots in force, or of a past
        time's snapshots when they are small (`PAST_COPY_ROWS`, made once and kept:
        `past_bytes_kept`); larger ones are asked of the warehouse. With `ready_only`, None
        unless the copy in force is made and the question is of current offers: nothing is
        read or made (what the event loop may ask)."""
        past = query.as_of is not None
        if past and ready_only:
            return None
        if past:
            check_as_of(query.as_of, now, self.settings.retention)
            snapshots = snapshots_as_of(self.warehouse, query.as_of)
            if sum(snap["offer_count"] for snap in snapshots) > PAST_COPY_ROWS:
                return answer_offers(self.warehouse, self.settings, query, now, freshness, max_age)
            freshness = _as_of_freshness(self.settings, query.as_of, snapshots)
        restricted = _within_max_age(query, freshness, max_age)
        if restricted is None:
            return _NONE
        filters = restricted.filters()
        if past:
            copy = self._past_copy(snapshots, query.as_of, filters)
            filters = replace(filters, as_of=None)  # the copy is that time's
        else:
            held = self._fresh() if ready_only else self._snapshots()
            if held is None or (ready_only and held.copy is None):
                return None
            copy = self._copy(held, filters)
        positions = copy.select(filters)
        stale_providers = frozenset(f.provider for f in freshness if f.stale)
        if past:
            marked = copy.table.select(_MARKED_COLUMNS).take(pa.array(positions, pa.int64()))
            stale = stale_marks(marked, stale_providers)
        else:  # every offer of the copy marked once per set of stale providers
            marks = held.marks
            if marks is None or marks[0] != stale_providers:
                marks = held.marks = (stale_providers, stale_marks(copy.table, stale_providers))
            stale = marks[1][positions]
        providers = reported_providers(freshness, restricted.providers)
        return OffersAnswer(providers, stale, copy, positions)

    def _past_copy(
        self, snapshots: list[dict[str, Any]], as_of: datetime, filters: OfferFilters
    ) -> CurrentOffers:
        """The copy of these snapshots (each provider's as of `as_of`)."""
        key = tuple(sorted(snap["run_id"] for snap in snapshots))
        with self._lock:
            kept = self._past.get(key)
            if kept is not None:
                self._past.move_to_end(key)
                self._trim_past()  # its offers may have been written since
                return kept
        runs = [(snap["run_id"], snap["observed_at"]) for snap in snapshots]
        with self.warehouse.cursor() as cur:
            copy = CurrentOffers.load(
                cur, key, filters.gpu_figures, past=(runs, as_of),
                derived_bytes=self.derived_bytes_kept,
            )  # fmt: skip
        with self._lock:
            self._past[key] = copy
            self._trim_past()
        return copy

    def _trim_past(self) -> None:
        """Least recently asked past copies out until the rest fit `past_bytes_kept` (the one
        just asked for is answered from even when it alone does not fit, then dropped)."""
        while self._past and sum(c.nbytes for c in self._past.values()) > self.past_bytes_kept:
            self._past.popitem(last=False)

    @property
    def kept_bytes(self) -> int:
        """Bytes this server keeps: the copy in force and the past copies."""
        held = self._held
        current = held.copy.nbytes if held is not None and held.copy is not None else 0
        return current + sum(c.nbytes for c in list(self._past.values()))
