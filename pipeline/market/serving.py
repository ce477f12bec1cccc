"""What every offer question answers (`/offers`, the CLI, the page, alerts, quotes, exports, MCP):
offers plus the freshness of their providers, from the one engine
(`warehouse.current.CurrentOffers`).

`OfferServer.answer` is the one answer: it picks the copy (`_copy_for`): the copy of the
snapshots in force, read once per version of them (each provider's status is read once per
burst) and dropped when a provider's snapshot changes; or, with `as_of`, a copy of each
provider's snapshot then, kept while the past copies fit `past_bytes_kept` (least recently asked
out; one too large alone is answered, then dropped). A serving process keeps one server; a
command asks a new one. An answer is offers, never bytes (`OffersAnswer`: positions in a copy
and whether each is stale); `api/` writes them.
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
from pipeline.market.history import check_as_of
from pipeline.market.offers import OfferQuery, read_copy, snapshots_as_of
from pipeline.settings import Settings
from warehouse import OfferFilters, Warehouse
from warehouse.current import CurrentOffers, Positions

__all__ = ["OfferServer", "OffersAnswer", "reported_providers"]

STATUS_TTL_S = 1.0
"""How long one read of the runs table serves a burst of requests. A run written through this
process's warehouse shows at once (`Warehouse.generation`); the TTL bounds how late a run
written by another process (a collector on the same lake) shows."""
MIB = 1024 * 1024
PAST_SHARE = 1 / 16
"""Of `Settings.memory_budget_mb`: the bytes of past copies kept in all (`CurrentOffers.nbytes`:
tables, columns, derived answers and offers written), least recently asked out."""
DERIVED_SHARE = 1 / 16
"""Of the budget: the derived answers each copy keeps (`warehouse.current.DERIVED_BYTES_KEPT`):
each sort's ranks, sets of GPUs' positions and passing combinations."""


@dataclass(frozen=True, slots=True)
class OffersAnswer:
    """An answer's offers in order, as positions in the copy that answered (`copy`,
    `positions`), whether each is stale (`stale`), the providers it reports on, and whether the
    copy is of a past time (`past`: asked rarely, maybe dropped after this answer)."""

    providers: list[ProviderFreshness]
    stale: npt.NDArray[np.bool_]
    copy: CurrentOffers
    positions: Positions
    past: bool = False

    @property
    def count(self) -> int:
        return len(self.stale)

    @property
    def table(self) -> pa.Table:
        """The offers as Arrow rows of the copy (without `stale`)."""
        return self.copy.table.take(pa.array(self.positions, pa.int64()))

    @property
    def offers(self) -> list[dict[str, Any]]:
        """Each offer as a row, with its `stale` mark."""
        rows = self.copy.rows_at(self.positions)
        return [{**row, "stale": s} for row, s in zip(rows, self.stale.tolist(), strict=True)]


def _within_max_age(
    filters: OfferFilters, freshness: Sequence[ProviderFreshness], max_age: timedelta | None
) -> OfferFilters | None:
    """`filters` limited to providers whose snapshot is at most `max_age` old (None: none
    is)."""
    if max_age is None:
        return filters
    wanted = set(filters.providers) if filters.providers else {f.provider for f in freshness}
    providers = frozenset(wanted & within_max_age(freshness, max_age))
    return replace(filters, providers=providers) if providers else None


def reported_providers(
    freshness: Sequence[ProviderFreshness], asked: Sequence[str] | frozenset[str] | None
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


def _stale(
    copy: CurrentOffers, positions: Positions, stale: frozenset[str]
) -> npt.NDArray[np.bool_]:
    """Whether each offer at `positions` is stale: every offer of the copy marked once per set
    of stale providers (the last set kept with the copy)."""
    kept: dict[frozenset[str], npt.NDArray[np.bool_]] = copy.kept("stale marks", dict)
    marks = kept.get(stale)
    if marks is None:
        marks = stale_marks(copy.table, stale)
        kept.clear()
        kept[stale] = marks
    return marks[positions]


@dataclass(slots=True)
class _Snapshots:
    """What was read for one version of the snapshots in force."""

    status: list[dict[str, Any]]
    rate_dates: dict[str, date]
    read_at: float
    generation: int
    copy: CurrentOffers | None = None
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
                fresh.copy = previous.copy  # the same offers
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
        """The copy of the snapshots in force, read once per version of them."""
        copy = held.copy
        if copy is None:
            with self._lock:
                copy = held.copy
                if copy is None:
                    copy = read_copy(self.warehouse, replace(filters, as_of=None),
                                     derived_bytes=self.derived_bytes_kept)  # fmt: skip
                    held.copy = copy
        return copy

    def gpus_offered(self) -> set[str]:
        """The GPU ids with an offer in the snapshots in force, available or not."""
        _, names = self._copy(self._snapshots(), OfferQuery().filters()).codes("gpu")
        return set(names)

    def offers(self, query: OfferQuery) -> list[dict[str, Any]]:
        """The offers `query` selects (now, or as of `query.as_of`), as rows."""
        filters = query.filters()
        return self._copy_for(filters, None).rows(filters)

    def answer(
        self,
        query: OfferQuery,
        now: datetime,
        freshness: Sequence[ProviderFreshness],
        max_age: timedelta | None = None,
        *,
        ready_only: bool = False,
    ) -> OffersAnswer | None:
        """The offers `query` selects, each marked stale with its provider, and the providers'
        freshness (now, or as of `query.as_of`: each provider's snapshot then). `max_age` leaves
        out providers whose snapshot is older; a provider whose last run failed still serves its
        last good snapshot, marked stale. With `ready_only`, None unless the copy in force is
        made and the question is of current offers: nothing is read or made (what the event
        loop may ask)."""
        past = query.as_of is not None
        if ready_only and (past or (held := self._fresh()) is None or held.copy is None):
            return None
        filters = query.filters()
        snapshots = None
        if filters.as_of is not None:
            check_as_of(filters.as_of, now, self.settings.retention)
            snapshots = snapshots_as_of(self.warehouse, filters.as_of)
            freshness = _as_of_freshness(self.settings, filters.as_of, snapshots)
        restricted = _within_max_age(filters, freshness, max_age)
        copy = self._copy_for(filters, snapshots)
        positions = copy.select(restricted) if restricted else np.empty(0, np.int64)
        stale = _stale(copy, positions, frozenset(f.provider for f in freshness if f.stale))
        providers = reported_providers(freshness, restricted.providers) if restricted else []
        return OffersAnswer(providers, stale, copy, positions, past)

    def _copy_for(
        self, filters: OfferFilters, snapshots: list[dict[str, Any]] | None
    ) -> CurrentOffers:
        """The copy that answers `filters`: the one of the snapshots in force, or with `as_of`
        the one of each provider's snapshot then (`snapshots`, when found already)."""
        if filters.as_of is None:
            return self._copy(self._snapshots(), filters)
        if snapshots is None:
            snapshots = snapshots_as_of(self.warehouse, filters.as_of)
        key = tuple(sorted(snap["run_id"] for snap in snapshots))
        with self._lock:
            kept = self._past.get(key)
            if kept is not None:
                self._past.move_to_end(key)
                self._trim_past()  # its offers may have been written since
                return kept
        copy = read_copy(self.warehouse, filters, snapshots, self.derived_bytes_kept)
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
