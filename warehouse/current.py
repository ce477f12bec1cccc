"""An in-memory copy of `current_offers` that answers `latest_offers` without a query.

A serving process asks for offers many times per snapshot, and the snapshot changes only when a
provider run is written (minutes apart). `CurrentOffers.load` reads the table once (with the
derived columns of `offers_relation`, computed by the same SQL), cheapest per GPU-hour first,
into Arrow columns, and keeps each filtered column as a NumPy array: numbers as float64 with NaN
for NULL (a comparison with NaN is false, as a NULL condition in SQL), flags with NULL as false,
text as codes into its distinct values (an `IN` is one lookup table indexed by the codes). Which
columns and how they compare come from the one table of filters (`warehouse.filters.FILTERS`).
The text and flag filters are evaluated once per combination of
values rows share (`ValueCombinations`), numbers row by row.
`select(filters)` evaluates the filters on whole arrays and gives the positions of the first
`limit` matches in the answer's order: the rows `latest_offers` would return, in the same order
and with the same keys and values (`rows`). A time in the past (`as_of`) is for `latest_offers`
or for a copy of that time's snapshots (see `load`).

Each sort order is a view: the loaded positions in that order, and each GPU's positions in it,
so a `gpus` filter reads only that GPU's offers, already sorted. A position names one offer for
the life of the copy: a caller can keep what it makes of an offer (its JSON) by position.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.combinations import ValueCombinations, all_of
from warehouse.filters import FILTERS
from warehouse.offers import (
    GpuFigure,
    OfferFilters,
    SortKey,
    arrow_rows,
    offers_relation,
    order_by,
    snapshots_source,
    sort_columns,
)

__all__ = ["DERIVED_BYTES_KEPT", "CurrentOffers", "Positions"]

Positions = npt.NDArray[np.int64]
"""Offers of a copy, by position (row number as loaded)."""
Mask = npt.NDArray[np.bool_]
_LOADED_ORDER: SortKey = "price_per_gpu_hour"
_FIRST_STEP = 2048
"""Candidates read at first when a limit is given (then twice as many each step)."""
_BATCH_ROWS = 512
"""Rows turned into Python objects per call, short enough that other threads get the GIL
between calls."""
_BOUNDS = tuple(f for f in FILTERS if f.compare in ("<=", ">=", "="))
"""Bounds on numeric columns, evaluated row by row (NaN, i.e. NULL, never passes)."""
_COMPARE: dict[str, Callable[[Any, Any], Mask]] = {
    "<=": np.less_equal, ">=": np.greater_equal, "=": np.equal,
}  # fmt: skip
_NUMBERS = tuple(dict.fromkeys(c for f in _BOUNDS for c in f.columns))
_FLAGS = tuple(
    dict.fromkeys(
        c
        for f in FILTERS
        if f.compare in ("required", "unless", "named")
        for c in f.column.split("|")
    )
)
_TEXTS = tuple(dict.fromkeys(f.column for f in FILTERS if f.compare in ("is", "in", "contains")))
_BY_COMBINATION = tuple(f for f in FILTERS if f not in _BOUNDS and f.name != "gpus")
"""The filters over a row's combination of values: every text and flag filter but `gpus` (a
view's groups)."""
_COMBINATION_COLUMNS = (*(name for name in _TEXTS if name != "gpu"), *_FLAGS)
"""The columns of a row's combination of values (`ValueCombinations`): every text and flag a
filter other than `gpus` reads."""
DERIVED_BYTES_KEPT = 16 * 1024 * 1024
"""Default bytes of derived answers a copy keeps beside its columns: each question's passing
combinations, each sort order's view and its GPUs' groups. Past it they are dropped and made
again as asked (`CurrentOffers(derived_bytes=...)` sets another bound)."""


class _Text:
    """A text column as codes into its distinct values (NULL: the last code)."""

    def __init__(self, values: pa.Array) -> None:
        encoded = pc.dictionary_encode(values)
        self.names: list[str] = encoded.dictionary.to_pylist()
        self.code_of = {name: code for code, name in enumerate(self.names)}
        self.codes = pc.fill_null(encoded.indices, len(self.names)).to_numpy().astype(np.intp)
        """As `intp`, NumPy's index type: indexing with int32 converts every code first."""

    def among(self, codes: np.ndarray, wanted: frozenset[str]) -> Mask:
        """Whether each of `codes` (some rows' codes) stands for a value in `wanted`."""
        if len(wanted) == 1:
            (name,) = wanted
            return codes == self.code_of.get(name, -1)
        table = np.zeros(len(self.names) + 1, dtype=np.bool_)
        table[[self.code_of[name] for name in wanted if name in self.code_of]] = True
        return table[codes]


class _Columns(dict[str, np.ndarray]):
    """The filtered columns (numbers, flags, text codes) of some rows: every row, or one
    GPU's in a view's order, each taken from every row's the first time a filter reads it."""

    def __init__(self, every: dict[str, np.ndarray], rows: Positions | None = None) -> None:
        super().__init__(every if rows is None else {})
        self.every, self.rows = every, rows

    def __missing__(self, name: str) -> np.ndarray:
        assert self.rows is not None
        taken = self[name] = self.every[name][self.rows]
        return taken

    def at(self, rows: Positions) -> _Columns:
        return _Columns(self.every, rows)


class _Slice:
    """Rows `start:stop` of some columns (NumPy slices: views, nothing copied)."""

    def __init__(self, columns: _Columns, start: int, stop: int) -> None:
        self.columns, self.start, self.stop = columns, start, stop

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name][self.start : self.stop]


class _View:
    """The loaded positions in one sort order (None: the loaded order), and each GPU's
    positions in it, with that GPU's columns in that order (taken once, when first filtered)."""

    def __init__(self, gpu: _Text, order: Positions | None) -> None:
        self.order = order
        self.ranks: Positions | None = None
        codes = gpu.codes if order is None else gpu.codes[order]
        by_gpu = np.argsort(codes, kind="stable")  # each GPU's rows together, in view order
        bounds = np.searchsorted(codes[by_gpu], np.arange(len(gpu.names) + 1))
        self.rows_of_gpu: dict[str, Positions] = {}
        for code, name in enumerate(gpu.names):
            at = by_gpu[bounds[code] : bounds[code + 1]]
            self.rows_of_gpu[name] = at if order is None else order[at]
        self.groups: dict[tuple[str, ...], tuple[Positions, _Columns]] = {}

    def group(self, gpus: tuple[str, ...], every: _Columns) -> tuple[Positions, _Columns]:
        """The positions of these GPUs' offers in the view's order, with their columns (kept:
        the GPUs a `gpu=` value means are a catalog family or id, a bounded set)."""
        found = self.groups.get(gpus)
        if found is None:
            if len(gpus) == 1:
                rows = self.rows_of_gpu[gpus[0]]
            else:
                rows = self._merged([self.rows_of_gpu[g] for g in gpus], len(every["gpu"]))
            found = self.groups[gpus] = (rows, every.at(rows))
        return found

    @property
    def nbytes(self) -> int:
        """Its positions and its groups' positions and columns taken so far."""
        arrays = [self.order, self.ranks, *self.rows_of_gpu.values()]
        for rows, columns in self.groups.values():
            arrays += [rows, *columns.values()]
        return sum(a.nbytes for a in arrays if a is not None)

    def _merged(self, parts: list[Positions], size: int) -> Positions:
        """Several GPUs' positions merged into the view's order."""
        merged = np.concatenate(parts) if parts else np.empty(0, np.int64)
        if self.order is None:
            return np.sort(merged)
        if self.ranks is None:  # each loaded position's place in the view: the inverse order
            self.ranks = np.empty(size, np.int64)
            self.ranks[self.order] = np.arange(size)
        return merged[np.argsort(self.ranks[merged], kind="stable")]


class CurrentOffers:
    """`current_offers` as of one read, in each order `select` is asked for."""

    def __init__(
        self, table: pa.Table, version: Any = None, derived_bytes: int = DERIVED_BYTES_KEPT
    ) -> None:
        self.version = version
        self.derived_bytes = derived_bytes
        self.attached_bytes = 0
        """Bytes a caller keeps with the copy (its offers written as JSON), counted in `nbytes`."""
        """What the copy was read for (the caller's key, e.g. each provider's snapshot run)."""
        self.table = table.combine_chunks()
        column = self.table.column
        texts = {name: _Text(column(name).combine_chunks()) for name in _TEXTS}
        self._texts = texts
        every = {
            **{
                name: pc.fill_null(pc.cast(column(name), pa.float64()), np.nan).to_numpy()
                for name in _NUMBERS
            },
            **{
                name: pc.fill_null(column(name), False).to_numpy().astype(np.bool_)
                for name in _FLAGS
            },
            **{name: text.codes for name, text in texts.items()},
        }
        sizes = {**{n: len(t.names) + 1 for n, t in texts.items()}, **dict.fromkeys(_FLAGS, 2)}
        self._combinations = ValueCombinations(
            every, sizes, _COMBINATION_COLUMNS, _BY_COMBINATION, derived_bytes // 4
        )
        self._columns = _Columns({**every, "combination": self._combinations.codes})
        self._views: dict[SortKey, _View] = {_LOADED_ORDER: _View(texts["gpu"], None)}

    @classmethod
    def load(
        cls,
        conn: duckdb.DuckDBPyConnection,
        version: Any = None,
        gpu_figures: tuple[GpuFigure, ...] = (),
        past: tuple[list[tuple[str, datetime]], datetime] | None = None,
        derived_bytes: int = DERIVED_BYTES_KEPT,
    ) -> CurrentOffers:
        """`current_offers` now, or the offers of each provider's snapshot as of a time (`past`:
        those snapshots, as `latest_offers` finds them, and the time): a copy that answers
        that time's questions (`select` with the filters' `as_of` left out)."""
        params: list[Any] = []
        source, snapshot_params = "current_offers", []
        if past is not None:
            source, snapshot_params = snapshots_source(*past)
        relation = offers_relation(source, gpu_figures, params)
        table = conn.execute(
            f"SELECT * FROM {relation} ORDER BY {order_by(_LOADED_ORDER)}",
            params + snapshot_params,
        ).to_arrow_table()
        return cls(table, version, derived_bytes)

    @property
    def size(self) -> int:
        return int(self.table.num_rows)

    @property
    def nbytes(self) -> int:
        """What the copy holds: its table, columns, derived answers and attached bytes."""
        columns = sum(a.nbytes for a in self._columns.every.values())
        return self.table.nbytes + columns + self.derived_nbytes + self.attached_bytes

    @property
    def derived_nbytes(self) -> int:
        """Bytes of derived answers kept (views, their groups, passing combinations)."""
        return self._combinations.kept_bytes + sum(v.nbytes for v in self._views.values())

    @staticmethod
    def answers(filters: OfferFilters) -> bool:
        """Whether `select` answers these filters (else ask `latest_offers`)."""
        return filters.as_of is None

    def rows(self, filters: OfferFilters) -> list[dict[str, Any]]:
        """What `latest_offers(conn, filters)` returns, for filters this copy `answers`."""
        return self.rows_at(self.select(filters))

    def rows_at(
        self, positions: Positions, columns: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The rows at `positions` (only `columns`, in that order, when given)."""
        table = self.table if columns is None else self.table.select(columns)
        taken = table.take(pa.array(positions, pa.int64()))
        # In batches: one long conversion would hold the GIL (and stall the event loop) throughout
        batches = taken.to_batches(max_chunksize=_BATCH_ROWS)
        return [row for b in batches for row in arrow_rows(pa.Table.from_batches([b]))]

    def codes(self, column: str) -> tuple[np.ndarray, list[str]]:
        """A text column (`gpu`, `provider`, ...) of every row as codes, and the names they
        stand for (a NULL's code is `len(names)`)."""
        text = self._texts[column]
        return text.codes, text.names

    def select(self, filters: OfferFilters) -> Positions:
        """Positions of the offers `latest_offers(conn, filters)` returns, in its order."""
        if not self.answers(filters):
            raise ValueError("as_of is answered by latest_offers")
        view = self._view(filters.sort)
        if filters.gpus is not None:  # these GPUs' own rows and columns, in the view's order
            present = tuple(g for g in sorted(filters.gpus) if g in view.rows_of_gpu)
            return self._first_passing(*view.group(present, self._columns), filters, view)
        if view.order is None:
            return self._first_passing(None, self._columns, filters, view)
        return self._first_passing(view.order, None, filters, view)

    def _first_passing(
        self,
        candidates: Positions | None,
        columns: _Columns | None,
        filters: OfferFilters,
        view: _View,
    ) -> Positions:
        """The first `filters.limit` of `candidates` (None: every position) that pass the
        other filters. `columns` are the candidates' (None: taken as read). With a limit, the
        candidates are read in growing steps until the limit is reached: a page of the
        cheapest offers reads the cheapest few thousand, not every offer. In the loaded order
        (cheapest per GPU-hour first, NaN last), a price cap ends the candidates where the
        price passes it."""
        total = self.size if candidates is None else len(candidates)
        if view.order is None and columns is not None:  # a cap on the loaded order ends it
            for f, cap in filters.given():
                if f.column == _LOADED_ORDER and f.compare == "<=":
                    total = int(np.searchsorted(columns[_LOADED_ORDER], cap, side="right"))
        limit = filters.limit
        step = total if limit is None else max(_FIRST_STEP, 4 * limit)
        found: list[Positions] = []
        count = start = 0
        while start < total and (limit is None or count < limit):
            stop = min(total, start + step)
            rows = np.arange(start, stop) if candidates is None else candidates[start:stop]
            part = self._columns.at(rows) if columns is None else _Slice(columns, start, stop)
            mask = self._mask(part, filters)
            hits = rows if mask is None else rows[mask]
            found.append(hits)
            count, start, step = count + len(hits), stop, step * 2
        if not found:
            return np.empty(0, np.int64)
        positions = found[0] if len(found) == 1 else np.concatenate(found)
        return positions[:limit]

    def _view(self, sort: SortKey) -> _View:
        if sort not in self._views:
            keys = [
                (name, "descending" if d else "ascending", "at_end")  # unknown values last
                for name, d in sort_columns(sort)
            ]
            order = pc.sort_indices(self.table, sort_keys=keys).to_numpy().astype(np.int64)
            self._views[sort] = _View(self._texts["gpu"], order)
        view = self._views[sort]
        if sum(v.nbytes for v in self._views.values()) > self.derived_bytes * 3 // 4:
            for other in self._views.values():  # made again as asked; this one's groups too
                other.groups.clear()
            self._views = {_LOADED_ORDER: self._views[_LOADED_ORDER], sort: view}
        return view

    def _mask(self, columns: _Columns | _Slice, filters: OfferFilters) -> Mask | None:
        """The filters other than `gpus` over `columns`' rows (None: every row passes): the
        bounds on numbers row by row, the others by each row's combination of values
        (`ValueCombinations`)."""
        conditions = _bound_conditions(columns, filters)
        passing = self._combinations.passing(filters, self._combination_conditions)
        if passing is not None:
            conditions.append(passing[columns["combination"]])
        return all_of(conditions)

    def _combination_conditions(self, columns: dict[str, np.ndarray], filters: Any) -> list[Mask]:
        """The text and flag filters over `columns` (each combination's values)."""
        conditions: list[Mask] = []
        for f in _BY_COMBINATION:
            value = getattr(filters, f.name)
            if not f.given(value):
                continue
            if f.compare in ("is", "in"):
                text = self._texts[f.column]
                wanted = frozenset({value}) if f.compare == "is" else value
                conditions.append(text.among(columns[f.column], wanted))
            elif f.compare == "contains":
                part, names = value.lower(), self._texts[f.column].names
                hit = np.array([part in name.lower() for name in names] + [False])
                conditions.append(hit[columns[f.column]])
            else:  # a flag: its own column, or (`named`) the column the value names
                conditions.append(columns[value if f.compare == "named" else f.column])
        return conditions


def _bound_conditions(columns: _Columns | _Slice, filters: Any) -> list[Mask]:
    """The bounds on numeric columns over `columns`' rows (NaN, i.e. NULL, never passes)."""
    conditions = []
    for f in _BOUNDS:
        value = getattr(filters, f.name)
        if value is not None:
            first, *more = f.columns
            compared = columns[first] if not more else np.prod([columns[c] for c in f.columns], 0)
            conditions.append(_COMPARE[f.compare](compared, value))
    return conditions
