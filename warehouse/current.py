"""The one engine of offer questions: an in-memory copy of offers that answers any `OfferFilters`.

A serving process asks for offers many times per snapshot, and the snapshot changes only when a
provider run is written (minutes apart). `CurrentOffers.load` reads the offers once
(`warehouse.offers.read_offers`: the current snapshots, or each provider's snapshot as of a past
time, with the derived columns, cheapest per GPU-hour first) into Arrow columns, and keeps each
filtered column as a NumPy array: numbers as float64 with NaN for NULL (a comparison with NaN is
false, as a NULL never passes), flags with NULL as false, text as codes into its distinct values
(an `IN` is one lookup table indexed by the codes). Which columns and how they compare come from
the one table of filters (`warehouse.filters.FILTERS`). The text and flag filters are evaluated
once per combination of values rows share (`ValueCombinations`), numbers row by row.

`select(filters)` gives the positions of the first `limit` matches in the answer's order:
1. the candidates: the asked GPUs' positions (kept per GPU), else every position; a cap on the
   price per GPU-hour ends them where the loaded order passes it;
2. one mask over every candidate at once (100,000 booleans take microseconds);
3. the order: the loaded one already; another sort ranks the matches by that sort's ranks (each
   position's place in it, made once per sort and kept) and keeps the first `limit`.

A position names one offer for the life of the copy: a caller keeps what it makes of the copy
(e.g. its offers written as JSON, by position) with the copy itself (`kept`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, cast

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.combinations import Mask, ValueCombinations, all_of
from warehouse.filters import FILTERS, Filter
from warehouse.offers import (
    LOADED_ORDER,
    GpuFigure,
    OfferFilters,
    SortKey,
    arrow_rows,
    read_offers,
    sort_columns,
)

__all__ = ["DERIVED_BYTES_KEPT", "CurrentOffers", "Positions"]

Positions = npt.NDArray[np.int64]
"""Offers of a copy, by position (row number as loaded)."""
Rows = slice | Positions
"""Some positions: a run of them from the first (a slice: NumPy views, nothing copied), or a
list."""
T = TypeVar("T")
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
"""The filters over a row's combination of values: every text and flag filter but `gpus` (the
candidates)."""
_COMBINATION_COLUMNS = (*(name for name in _TEXTS if name != "gpu"), *_FLAGS)
"""The columns of a row's combination of values (`ValueCombinations`): every text and flag a
filter other than `gpus` reads."""
DERIVED_BYTES_KEPT = 16 * 1024 * 1024
"""Default bytes of derived answers a copy keeps beside its columns: each question's passing
combinations, each sort's ranks and each set of GPUs' positions. Past it they are dropped and
made again as asked (`CurrentOffers(derived_bytes=...)` sets another bound)."""


class _Text:
    """A text column as codes into its distinct values (NULL: the last code)."""

    def __init__(self, values: pa.Array) -> None:
        encoded = pc.dictionary_encode(values)
        self.names: list[str] = encoded.dictionary.to_pylist()
        self.code_of = {name: code for code, name in enumerate(self.names)}
        self.codes: npt.NDArray[np.intp] = (
            pc.fill_null(encoded.indices, len(self.names)).to_numpy().astype(np.intp)
        )
        """As `intp`, NumPy's index type: indexing with int32 converts every code first."""

    def among(self, codes: npt.NDArray[np.intp], wanted: frozenset[str]) -> Mask:
        """Whether each of `codes` (some rows' codes) stands for a value in `wanted`."""
        if len(wanted) == 1:
            (name,) = wanted
            return cast(Mask, codes == self.code_of.get(name, -1))
        table = np.zeros(len(self.names) + 1, dtype=np.bool_)
        table[[self.code_of[name] for name in wanted if name in self.code_of]] = True
        return cast(Mask, table[codes])


class CurrentOffers:
    """Offers as of one read (the current snapshots, or a past time's): see the module
    docstring."""

    def __init__(
        self, table: pa.Table, version: Any = None, derived_bytes: int = DERIVED_BYTES_KEPT
    ) -> None:
        self.version = version
        """What the copy was read for (the caller's key, e.g. each provider's snapshot run)."""
        self.derived_bytes = derived_bytes
        self.attached_bytes = 0
        """Bytes a caller keeps with the copy (`kept`), counted in `nbytes`."""
        self.table = table.combine_chunks()
        column = self.table.column
        self._texts = {name: _Text(column(name).combine_chunks()) for name in _TEXTS}
        self._columns: dict[str, np.ndarray] = {
            **{
                name: pc.fill_null(pc.cast(column(name), pa.float64()), np.nan).to_numpy()
                for name in _NUMBERS
            },
            **{
                name: pc.fill_null(column(name), False).to_numpy().astype(np.bool_)
                for name in _FLAGS
            },
            **{name: text.codes for name, text in self._texts.items()},
        }
        sizes = {
            **{n: len(t.names) + 1 for n, t in self._texts.items()},
            **dict.fromkeys(_FLAGS, 2),
        }
        self._combinations = ValueCombinations(
            self._columns, sizes, _COMBINATION_COLUMNS, _BY_COMBINATION, derived_bytes // 4
        )
        self._columns["combination"] = self._combinations.codes
        gpu = self._texts["gpu"]
        by_gpu = np.argsort(gpu.codes, kind="stable")  # each GPU's positions, ascending
        bounds = np.searchsorted(gpu.codes[by_gpu], np.arange(len(gpu.names) + 1))
        self._rows_of_gpu = {
            name: by_gpu[bounds[code] : bounds[code + 1]] for code, name in enumerate(gpu.names)
        }
        self._gpu_sets: dict[tuple[str, ...], Positions] = {}
        """Several GPUs' positions merged (a family's, asked again and again)."""
        self._ranks: dict[SortKey, npt.NDArray[np.int32]] = {}
        """Each sort's ranks: every position's place in that order."""
        self._kept: dict[str, object] = {}
        self._lock = threading.Lock()
        self._loaded_bytes = int(self.table.nbytes) + sum(a.nbytes for a in self._columns.values())
        """The table's and columns' bytes, fixed for the copy's life (`nbytes` is asked of every
        kept copy whenever a past one is asked for)."""

    @classmethod
    def load(
        cls,
        conn: duckdb.DuckDBPyConnection,
        version: Any = None,
        gpu_figures: tuple[GpuFigure, ...] = (),
        past: tuple[list[tuple[str, datetime]], datetime] | None = None,
        derived_bytes: int = DERIVED_BYTES_KEPT,
    ) -> CurrentOffers:
        """The current offers, or those of each provider's snapshot as of a time (`past`: those
        snapshots and the time): a copy that answers that time's questions."""
        return cls(read_offers(conn, gpu_figures, past), version, derived_bytes)

    @property
    def size(self) -> int:
        return int(self.table.num_rows)

    @property
    def nbytes(self) -> int:
        """What the copy holds: its table, columns, derived answers and attached bytes."""
        return self._loaded_bytes + self.derived_nbytes + self.attached_bytes

    @property
    def derived_nbytes(self) -> int:
        """Bytes of derived answers kept (ranks, GPU positions, passing combinations)."""
        arrays: list[np.ndarray] = [
            *self._rows_of_gpu.values(),
            *self._gpu_sets.values(),
            *self._ranks.values(),
        ]
        return self._combinations.kept_bytes + sum(a.nbytes for a in arrays)

    def kept(self, name: str, make: Callable[[], T]) -> T:
        """What a caller makes of this copy once (`make`) and keeps with it, by `name`: dropped
        with the copy. The caller counts its bytes in `attached_bytes`."""
        with self._lock:
            if name not in self._kept:
                self._kept[name] = make()
            return cast(T, self._kept[name])

    def rows(self, filters: OfferFilters) -> list[dict[str, Any]]:
        """The offers `filters` select, as rows (the copy's columns, in order)."""
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

    def codes(self, column: str) -> tuple[npt.NDArray[np.intp], list[str]]:
        """A text column (`gpu`, `provider`, ...) of every row as codes, and the names they
        stand for (a NULL's code is `len(names)`)."""
        text = self._texts[column]
        return text.codes, text.names

    def select(self, filters: OfferFilters) -> Positions:
        """Positions of the offers that pass `filters`, in its `sort` order (unknown values
        last, then `warehouse.offers.TIE_BREAK`), the first `limit`. `as_of` is not read: the
        copy is of one time, the caller's choice."""
        stop = self.size
        cap = filters.max_price_per_gpu_hour
        if cap is not None:  # the loaded order is cheapest first (NaN last): the cap ends it
            stop = int(np.searchsorted(self._columns[LOADED_ORDER], cap, side="right"))
        rows: Rows = slice(0, stop)
        if filters.gpus is not None:
            candidates = self._gpu_positions(filters.gpus)
            rows = candidates[: int(np.searchsorted(candidates, stop))]
        mask = self._mask(rows, filters)
        if isinstance(rows, slice):
            hits = np.arange(stop) if mask is None else np.flatnonzero(mask)
        else:
            hits = rows if mask is None else rows[mask]
        return self._ordered(hits.astype(np.int64, copy=False), filters.sort, filters.limit)

    def _gpu_positions(self, gpus: frozenset[str]) -> Positions:
        """The positions of these GPUs' offers, ascending."""
        present = tuple(sorted(g for g in gpus if g in self._rows_of_gpu))
        if len(present) <= 1:
            return self._rows_of_gpu[present[0]] if present else np.empty(0, np.int64)
        found = self._gpu_sets.get(present)
        if found is None:
            found = np.sort(np.concatenate([self._rows_of_gpu[g] for g in present]))
            with self._lock:
                if sum(a.nbytes for a in self._gpu_sets.values()) > self.derived_bytes // 4:
                    self._gpu_sets = {}  # the few asked often are made again as asked
                self._gpu_sets[present] = found
        return found

    def _ordered(self, hits: Positions, sort: SortKey, limit: int | None) -> Positions:
        """`hits` (ascending positions: the loaded order) in `sort`'s order, the first
        `limit`."""
        if sort == LOADED_ORDER:
            return hits[:limit]
        ranks = self._ranks_of(sort)[hits]
        if limit is not None and limit < len(hits):
            first = np.argpartition(ranks, limit - 1)[:limit]
            return hits[first[np.argsort(ranks[first])]]
        return hits[np.argsort(ranks)]

    def _ranks_of(self, sort: SortKey) -> npt.NDArray[np.int32]:
        """Each position's place in `sort`'s order (made once per sort, kept)."""
        ranks = self._ranks.get(sort)
        if ranks is None:
            keys = [
                (name, "descending" if d else "ascending", "at_end")  # unknown values last
                for name, d in sort_columns(sort)
            ]
            order = pc.sort_indices(self.table, sort_keys=keys).to_numpy()
            ranks = np.empty(self.size, np.int32)
            ranks[order] = np.arange(self.size, dtype=np.int32)
            with self._lock:
                if sum(a.nbytes for a in self._ranks.values()) > self.derived_bytes // 2:
                    self._ranks = {}
                self._ranks[sort] = ranks
        return ranks

    def _mask(self, rows: Rows, filters: OfferFilters) -> Mask | None:
        """The filters other than `gpus` (and the price cap `select` ends the rows at) over
        `rows` (None: every row passes): the bounds on numbers row by row, the others by each
        row's combination of values (`ValueCombinations`)."""
        columns = self._columns
        conditions: list[Mask] = []
        for f in _BOUNDS:
            value = getattr(filters, f.name)
            if value is None or (f.column == LOADED_ORDER and f.compare == "<="):
                continue
            first, *more = f.columns
            compared = columns[first][rows]
            for other in more:
                compared = compared * columns[other][rows]
            conditions.append(_COMPARE[f.compare](compared, value))
        passing = self._combinations.passing(
            [getattr(filters, f.name) for f in _BY_COMBINATION], self._combination_conditions
        )
        if passing is not None:
            conditions.append(passing[columns["combination"][rows]])
        return all_of(conditions)

    def _combination_conditions(
        self, columns: dict[str, np.ndarray], values: list[Any]
    ) -> list[Mask]:
        """The text and flag filters (`_BY_COMBINATION`, given `values`) over `columns` (each
        combination's values)."""
        conditions: list[Mask] = []
        for f, value in zip(_BY_COMBINATION, values, strict=True):
            if f.given(value):
                conditions.append(self._condition(f, value, columns))
        return conditions

    def _condition(self, f: Filter, value: Any, columns: dict[str, np.ndarray]) -> Mask:
        """One text or flag filter over `columns`."""
        if f.compare in ("is", "in"):
            wanted = frozenset({value}) if f.compare == "is" else value
            return self._texts[f.column].among(columns[f.column], wanted)
        if f.compare == "contains":
            part, names = value.lower(), self._texts[f.column].names
            hit = np.array([part in name.lower() for name in names] + [False])
            return cast(Mask, hit[columns[f.column]])
        if f.compare == "named" and value not in f.column.split("|"):
            raise ValueError(f"{f.name} is one of {f.column.replace('|', ', ')}, not {value!r}")
        # a flag: its own column, or (`named`) the column the value names
        return cast(Mask, columns[value if f.compare == "named" else f.column])
