"""An in-memory copy of `current_offers` that answers `latest_offers` without a query.

A serving process asks for offers many times per snapshot, and the snapshot changes only when a
provider run is written (minutes apart). `CurrentOffers.load` reads the table once (with the
derived columns of `offers_relation`, computed by the same SQL), cheapest per GPU-hour first,
into Arrow columns. `select(filters)` evaluates the filters on whole columns and gives the
positions of the first `limit` matches in the answer's order: the rows `latest_offers` would
return, in the same order and with the same keys and values (`rows`). Filters it does not
evaluate itself (`as_of`, `region`) are for `latest_offers` (see `answers`).

Each sort order is a view: the loaded positions in that order, and each GPU's positions in it,
so a `gpus` filter reads only that GPU's offers, already sorted. A position names one offer for
the life of the copy: a caller can keep what it makes of an offer (its JSON) by position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.offers import (
    GpuFigure,
    OfferFilters,
    SortKey,
    offers_relation,
    order_by,
    sort_columns,
)

__all__ = ["CurrentOffers"]

_LOADED_ORDER: SortKey = "price_per_gpu_hour"
_BATCH_ROWS = 128
"""Rows turned into Python objects per call: a few ms each, so other threads get the GIL."""
_FALSE = pa.scalar(False, pa.bool_())


def _scalar(values: pa.Array | pa.ChunkedArray, value: Any) -> pa.Scalar:
    """`value` as an Arrow scalar of the column's type. Typed: an untyped Python value costs
    pyarrow an import attempt of `dateutil` per call (~50 us where it is not installed)."""
    return pa.scalar(value, values.type)


class _Taken(dict[str, pa.Array]):
    """The columns of some rows (`at`), each taken the first time a filter reads it."""

    def __init__(self, columns: dict[str, pa.Array], at: pa.Array) -> None:
        super().__init__()
        self.columns, self.at = columns, at

    def __missing__(self, name: str) -> pa.Array:
        taken = self[name] = self.columns[name].take(self.at)
        return taken


class _View:
    """The loaded positions in one sort order (None: the loaded order), and each GPU's, with
    that GPU's columns in that order (taken once, when first filtered on)."""

    def __init__(self, table: pa.Table, order: pa.Array | None) -> None:
        self.order = order
        self.ranks: pa.Array | None = None
        gpus = table["gpu"] if order is None else table["gpu"].take(order)
        self.rows_of_gpu: dict[str, pa.Array] = {}
        self.columns_of_gpu: dict[str, _Taken] = {}
        for gpu in pc.unique(gpus).to_pylist():
            if gpu is None:
                continue
            at = pc.indices_nonzero(pc.fill_null(pc.equal(gpus, _scalar(gpus, gpu)), _FALSE))
            self.rows_of_gpu[gpu] = at if order is None else order.take(at)


class CurrentOffers:
    """`current_offers` as of one read, in each order `select` is asked for."""

    def __init__(self, table: pa.Table, version: Any = None) -> None:
        self.version = version
        """What the copy was read for (the caller's key, e.g. each provider's snapshot run)."""
        self.table = table.combine_chunks()
        self._columns = {  # one contiguous array each: `take` on them is cheaper than chunked
            name: self.table[name].combine_chunks() for name in self.table.column_names
        }
        self._views: dict[SortKey, _View] = {_LOADED_ORDER: _View(self.table, None)}

    @classmethod
    def load(
        cls,
        conn: duckdb.DuckDBPyConnection,
        version: Any = None,
        gpu_figures: tuple[GpuFigure, ...] = (),
    ) -> CurrentOffers:
        params: list[Any] = []
        relation = offers_relation("current_offers", gpu_figures, params)
        table = conn.execute(
            f"SELECT * FROM {relation} ORDER BY {order_by(_LOADED_ORDER)}", params
        ).to_arrow_table()
        return cls(table, version)

    @property
    def size(self) -> int:
        return int(self.table.num_rows)

    @staticmethod
    def answers(filters: OfferFilters) -> bool:
        """Whether `select` answers these filters (else ask `latest_offers`)."""
        return filters.as_of is None and filters.region is None

    def rows(self, filters: OfferFilters) -> list[dict[str, Any]]:
        """What `latest_offers(conn, filters)` returns, for filters this copy `answers`."""
        return self.rows_at(self.select(filters))

    def rows_at(self, positions: pa.Array) -> list[dict[str, Any]]:
        taken = self.table.take(positions)
        # In batches: one long to_pylist would hold the GIL (and stall the event loop) throughout
        return [row for b in taken.to_batches(max_chunksize=_BATCH_ROWS) for row in b.to_pylist()]

    def values_at(self, column: str, positions: pa.Array) -> list[Any]:
        return self._columns[column].take(positions).to_pylist()  # type: ignore[no-any-return]

    def distinct_at(self, column: str, positions: pa.Array) -> set[Any]:
        return set(pc.unique(self._columns[column].take(positions)).to_pylist())

    def select(self, filters: OfferFilters) -> pa.Array:
        """Positions of the offers `latest_offers(conn, filters)` returns, in its order."""
        if not self.answers(filters):
            raise ValueError("as_of and region filters are answered by latest_offers")
        view = self._view(filters.sort)
        candidates = view.order  # positions in the answer's order; None: every row as loaded
        if filters.gpus is None and view.order is not None:
            # Every offer, in another order: the filters over whole columns, then reordered
            mask = self._mask(self._columns, filters, None)
            positions = view.order if mask is None else view.order.filter(mask.take(view.order))
            return positions if filters.limit is None else positions[: filters.limit]
        columns: Mapping[str, pa.Array] = self._columns  # what the filters read, by name
        if filters.gpus is not None:
            present = [g for g in sorted(filters.gpus) if g in view.rows_of_gpu]
            if len(present) == 1:  # one GPU: its own rows and columns, in the view's order
                candidates = view.rows_of_gpu[present[0]]
                columns = view.columns_of_gpu.setdefault(
                    present[0], _Taken(self._columns, candidates)
                )
            elif present:
                candidates = self._merged(view, [view.rows_of_gpu[g] for g in present])
            else:
                candidates = pa.array([], pa.int64())
        one_gpu = columns is not self._columns
        mask = self._mask(columns, filters, None if one_gpu else candidates)
        if mask is not None:
            positions = pc.indices_nonzero(mask) if candidates is None else candidates.filter(mask)
        elif candidates is not None:
            positions = candidates
        else:
            positions = pa.array(range(self.table.num_rows), pa.int64())
        if filters.limit is not None:
            positions = positions[: filters.limit]
        return positions

    def _merged(self, view: _View, parts: list[pa.Array]) -> pa.Array:
        """Several GPUs' positions merged into the view's order."""
        merged = pa.concat_arrays(parts)
        if view.order is None:
            return pc.take(merged, pc.sort_indices(merged))
        if view.ranks is None:  # each loaded position's place in the view: the inverse order
            view.ranks = pc.sort_indices(view.order)
        return pc.take(merged, pc.sort_indices(view.ranks.take(merged)))

    def _view(self, sort: SortKey) -> _View:
        if sort not in self._views:
            keys = [
                (name, "descending" if d else "ascending", "at_end")  # unknown values last
                for name, d in sort_columns(sort)
            ]
            order = pc.sort_indices(self.table, sort_keys=keys)
            self._views[sort] = _View(self.table, order)
        return self._views[sort]

    @staticmethod
    def _mask(
        table: Mapping[str, pa.Array], filters: OfferFilters, rows: pa.Array | None
    ) -> pa.Array | None:
        """The other filters over `rows` of `table`'s columns (all rows when None)."""
        conditions: list[pa.Array] = []

        def column(name: str) -> pa.Array:
            values = table[name]
            return values if rows is None else values.take(rows)

        def among(name: str, values: frozenset[str] | None) -> None:
            if values is not None:
                value_set = pa.array(sorted(values), pa.string())
                conditions.append(pc.is_in(column(name), value_set=value_set))

        def equal(name: str, value: str | None) -> None:
            if value is not None:
                values = column(name)
                conditions.append(pc.equal(values, _scalar(values, value)))

        def bound(name: str, value: float | None, compare: Callable[..., pa.Array]) -> None:
            if value is not None:
                values = column(name)
                conditions.append(compare(values, _scalar(values, value)))

        among("provider", filters.providers)
        equal("pricing", filters.pricing)
        equal("form_factor", filters.form_factor)
        bound("price_per_gpu_hour", filters.max_price_per_gpu_hour, pc.less_equal)
        bound("price_per_hour", filters.max_price_per_hour, pc.less_equal)
        bound("gpu_count", filters.gpu_count, pc.equal)
        bound("gpu_count", filters.min_gpu_count, pc.greater_equal)
        bound("vram_gb", filters.min_vram_gb, pc.greater_equal)
        if filters.min_total_vram_gb is not None:
            total = pc.multiply(pc.cast(column("gpu_count"), pa.float64()), column("vram_gb"))
            conditions.append(pc.greater_equal(total, _scalar(total, filters.min_total_vram_gb)))
        bound("reliability", filters.min_reliability, pc.greater_equal)
        if filters.verified:
            conditions.append(column("verified"))
        if filters.nvlink:
            conditions.append(column("nvlink"))
        bound("vcpus", filters.min_vcpus, pc.greater_equal)
        bound("ram_gb", filters.min_ram_gb, pc.greater_equal)
        bound("disk_gb", filters.min_disk_gb, pc.greater_equal)
        if not filters.include_unavailable:
            conditions.append(column("available"))
        if filters.countries:
            among("country", filters.countries)
        if filters.continent:
            equal("continent", filters.continent)
        if filters.jurisdiction in ("eea", "eu"):
            conditions.append(column(filters.jurisdiction))
        if not conditions:
            return None
        mask = conditions[0]
        for condition in conditions[1:]:
            mask = pc.and_kleene(mask, condition)
        return pc.fill_null(mask, _FALSE)  # SQL: a NULL condition does not match
