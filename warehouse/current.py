"""An in-memory copy of `current_offers` that answers `latest_offers` without a query.

A serving process asks for the cheapest offers many times per snapshot, and the snapshot changes
only when a provider run is written (minutes apart). `CurrentOffers.load` reads the table once,
already in the answer's order, into Arrow columns; `rows(filters)` evaluates the filters on whole
columns and takes the first `limit` matches: the rows `latest_offers` would return, in the same
order and with the same keys and values. Filters it does not evaluate itself (`as_of`, `region`)
are for `latest_offers` (see `answers`). Each GPU's rows are indexed at load: a `gpus` filter
reads only those rows.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.offers import OfferFilters, SortKey

__all__ = ["CurrentOffers"]

_TIE_BREAK = ["provider", "offer_id", "pricing"]
_SORT_COLUMNS: dict[SortKey, list[str]] = {
    "price_per_gpu_hour": ["price_per_gpu_hour", "price_per_hour", *_TIE_BREAK],
    "price_per_hour": ["price_per_hour", "price_per_gpu_hour", *_TIE_BREAK],
}
"""As `offers_sql` orders (DuckDB compares strings by bytes, as Arrow does)."""
_LOADED_ORDER: SortKey = "price_per_gpu_hour"
_BATCH_ROWS = 128
"""Rows turned into Python objects per call: a few ms each, so other threads get the GIL."""


class _View:
    """The offers in one sort order, and where each GPU's offers are in it."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        gpus = table["gpu"]
        self.rows_of_gpu = {
            gpu: pc.indices_nonzero(pc.fill_null(pc.equal(gpus, gpu), False))
            for gpu in pc.unique(gpus).to_pylist()
            if gpu is not None
        }


class CurrentOffers:
    """`current_offers` as of one read, in each order `rows` is asked for."""

    def __init__(self, table: pa.Table, version: Any = None) -> None:
        self.version = version
        """What the copy was read for (the caller's key, e.g. each provider's snapshot run)."""
        self._views: dict[SortKey, _View] = {_LOADED_ORDER: _View(table.combine_chunks())}

    @classmethod
    def load(cls, conn: duckdb.DuckDBPyConnection, version: Any = None) -> CurrentOffers:
        order = ", ".join(_SORT_COLUMNS[_LOADED_ORDER])
        table = conn.execute(f"SELECT * FROM current_offers ORDER BY {order}").to_arrow_table()
        return cls(table, version)

    @property
    def table(self) -> pa.Table:
        return self._views[_LOADED_ORDER].table

    @staticmethod
    def answers(filters: OfferFilters) -> bool:
        """Whether `rows` answers these filters (else ask `latest_offers`)."""
        return filters.as_of is None and filters.region is None

    def rows(self, filters: OfferFilters) -> list[dict[str, Any]]:
        """What `latest_offers(conn, filters)` returns, for filters this copy `answers`."""
        if not self.answers(filters):
            raise ValueError("as_of and region filters are answered by latest_offers")
        view = self._view(filters.sort)
        candidates: pa.Array | None = None  # positions in the view; None: all of them
        if filters.gpus is not None:
            found = [view.rows_of_gpu[g] for g in sorted(filters.gpus) if g in view.rows_of_gpu]
            candidates = (
                pa.array([], pa.int64()) if not found
                else found[0] if len(found) == 1
                else pc.take(merged := pa.concat_arrays(found), pc.sort_indices(merged))
            )  # fmt: skip
        mask = self._mask(view.table, filters, candidates)
        if mask is not None:
            positions = pc.indices_nonzero(mask) if candidates is None else candidates.filter(mask)
        elif candidates is not None:
            positions = candidates
        else:
            positions = pa.array(range(view.table.num_rows), pa.int64())
        if filters.limit is not None:
            positions = positions[: filters.limit]
        taken = view.table.take(positions)
        # In batches: one long to_pylist would hold the GIL (and stall the event loop) throughout
        return [row for b in taken.to_batches(max_chunksize=_BATCH_ROWS) for row in b.to_pylist()]

    def _view(self, sort: SortKey) -> _View:
        if sort not in self._views:
            keys = [(name, "ascending") for name in _SORT_COLUMNS[sort]]
            self._views[sort] = _View(self.table.sort_by(keys).combine_chunks())
        return self._views[sort]

    @staticmethod
    def _mask(table: pa.Table, filters: OfferFilters, rows: pa.Array | None) -> pa.Array | None:
        """The other filters over `rows` of `table` (all rows when None)."""
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
                conditions.append(pc.equal(column(name), value))

        among("provider", filters.providers)
        equal("pricing", filters.pricing)
        equal("form_factor", filters.form_factor)
        if filters.max_price_per_gpu_hour is not None:
            conditions.append(
                pc.less_equal(column("price_per_gpu_hour"), filters.max_price_per_gpu_hour)
            )
        if filters.min_gpu_count is not None:
            conditions.append(pc.greater_equal(column("gpu_count"), filters.min_gpu_count))
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
        return pc.fill_null(mask, False)  # SQL: a NULL condition does not match
