"""Which offers: the resolved filter scope (`OfferFilters`), and the SQL that reads offers into
an in-memory copy (`read_offers`: current offers, or each provider's snapshot as of a time),
which `warehouse.current.CurrentOffers` filters and sorts, the one engine of offer questions.
`scope_conditions` turns the same scope into SQL for the one other question that filters in SQL:
the price history rebuilt from raw observations (`warehouse.history`).

Offers are read with two derived columns (`offers_relation`), computed here once from the
catalog's figures that the pipeline hands over (`GpuFigure`): `price_per_pflop_hour` (USD per
dense BF16 PFLOP-hour, FP16 on cards without BF16) and `nvlink` (the GPUs are linked by NVLink:
true on SXM boards, NULL where the catalog cannot tell, e.g. a PCIe card a bridge may link).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.filters import FILTERS, Filter, sql_condition

__all__ = [
    "DERIVED_COLUMNS",
    "NEWEST_SNAPSHOT",
    "SNAPSHOTS_AS_OF",
    "LOADED_ORDER",
    "SORT_FIELDS",
    "GpuFigure",
    "OfferFilters",
    "SortKey",
    "arrow_rows",
    "offers_relation",
    "read_offers",
    "scope_conditions",
    "sort_columns",
]

SortKey = str
"""A field of `SORT_FIELDS`, ascending; `-field` for descending."""
SORT_FIELDS = (
    "price_per_gpu_hour",
    "price_per_hour",
    "price_per_pflop_hour",
    "gpu_count",
    "vram_gb",
    "vcpus",
    "ram_gb",
    "disk_gb",
    "reliability",
)
"""The numeric offer fields an answer can be sorted on."""
TIE_BREAK = ("price_per_gpu_hour", "price_per_hour", "provider", "offer_id", "pricing")
"""After the sort field (unknown values last): cheapest per GPU-hour, then a stable key."""
DERIVED_COLUMNS = ("price_per_pflop_hour", "nvlink", "vendor")
LOADED_ORDER: SortKey = "price_per_gpu_hour"
"""The order offers are read in (`read_offers`): cheapest per GPU-hour first."""


@dataclass(frozen=True, slots=True)
class GpuFigure:
    """What the catalog says of one GPU id in one form factor (None: the form is not known)."""

    gpu: str
    form_factor: str | None
    dense_pflops: float | None
    """Dense BF16 (FP16 without BF16) PFLOP/s per GPU."""
    nvlink: bool | None
    """Linked by NVLink; None where it depends on the machine (a bridge, or several forms)."""
    vendor: str | None = None
    """Who makes the GPU, lower case (`nvidia`, `amd`, `intel`); None: not known."""


def sort_columns(sort: SortKey) -> list[tuple[str, bool]]:
    """(column, descending) in the order an answer is sorted: `sort`, then `TIE_BREAK`."""
    descending = sort.startswith("-")
    field = sort.removeprefix("-")
    if field not in SORT_FIELDS:
        raise ValueError(
            f"cannot sort on {field!r}; sort on one of {', '.join(SORT_FIELDS)} "
            "(-field for descending)"
        )
    rest = [(name, False) for name in TIE_BREAK if name != field]
    return [(field, descending), *rest]


@dataclass(frozen=True, slots=True)
class OfferFilters:
    """Filters over offers, already resolved: one field per row of `warehouse.filters.FILTERS`
    (in its order: tests/warehouse/test_filters.py holds them equal; `gpus`, `providers` and
    `countries` sets of names already checked; None, empty or a false flag mean "any"), then
    the answer's `sort` and `limit`, `as_of` (None: the current snapshots; else each provider's
    last good snapshot at or before it) and `gpu_figures` (the catalog's figures behind the
    derived columns; none: they are NULL). The pipeline's `OfferScope` is what users give; this
    is what the in-memory engine (`warehouse.current.CurrentOffers`) evaluates."""

    gpus: frozenset[str] | None = None
    providers: frozenset[str] | None = None
    sellers: frozenset[str] | None = None
    pricing: str | None = None
    region: str | None = None
    form_factor: str | None = None
    vendor: str | None = None
    countries: frozenset[str] | None = None
    continent: str | None = None
    jurisdiction: str | None = None
    max_price_per_gpu_hour: float | None = None
    max_price_per_hour: float | None = None
    gpu_count: int | None = None
    min_gpu_count: int | None = None
    min_vram_gb: float | None = None
    min_total_vram_gb: float | None = None
    min_reliability: float | None = None
    verified: bool = False
    nvlink: bool = False
    min_vcpus: float | None = None
    min_ram_gb: float | None = None
    min_disk_gb: float | None = None
    include_unavailable: bool = False
    sort: SortKey = "price_per_gpu_hour"
    limit: int | None = None
    as_of: datetime | None = None
    gpu_figures: tuple[GpuFigure, ...] = ()

    def given(self) -> list[tuple[Filter, Any]]:
        """The declared filters this one sets to something other than "any", with their
        values."""
        return [(f, value) for f in FILTERS if f.given(value := getattr(self, f.name))]


def scope_conditions(f: OfferFilters, params: list[Any]) -> list[str]:
    """SQL conditions for every scope filter of `f` (an `OfferFilters`), on any relation with
    the offer columns."""
    return [sql_condition(declared, value, params) for declared, value in f.given()]


NEWEST_SNAPSHOT = "{'observed': observed_at, 'finished': finished_at}"
"""The order of a provider's good runs: newest observation first, then last finished."""

SNAPSHOTS_AS_OF = """
    WITH newest AS (
        SELECT provider, max(observed_at) AS observed_at FROM collection_runs
        WHERE status = 'ok' AND observed_at <= ? GROUP BY provider
    )
    SELECT provider, observed_at, s.run_id, s.offer_count FROM (
        SELECT provider, observed_at,
               arg_max({'run_id': run_id, 'offer_count': offer_count}, finished_at) AS s
        FROM collection_runs SEMI JOIN newest USING (provider, observed_at)
        WHERE status = 'ok' GROUP BY provider, observed_at
    )
"""
"""Each provider's last good snapshot at or before `?` (`NEWEST_SNAPSHOT` order): its observed
time, run and size. The newest time first (a plain `max`), then the last finished run at that
time among the few runs that share it, rather than one `arg_max` over a struct (or over one
combined key) for every run up to `?` (slower: bench/history.py's as_of). `as_of` asks it once,
for the freshness and the offers both."""

_FIGURES = (
    "STRUCT(gpu VARCHAR, form_factor VARCHAR, dense_pflops DOUBLE, nvlink BOOLEAN, "
    "vendor VARCHAR)[]"
)


def offers_relation(source: str, figures: tuple[GpuFigure, ...], params: list[Any]) -> str:
    """`source` (a table of offers) with the derived columns, as a subquery: each offer's
    figures are those of its GPU in its form factor, else of its GPU in any form (the
    catalog's `form_factor` None row); `vendor` is the GPU's, whatever its form."""
    # One JSON text, not a list of dicts: DuckDB's driver converts a parameter value by value,
    # trying `import pandas` for each (where pandas is not installed, each try searches sys.path
    # again), and the figures are hundreds of values; bench/parameters.py prints both ways.
    params.append(json.dumps([
        {"gpu": f.gpu, "form_factor": f.form_factor, "dense_pflops": f.dense_pflops,
         "nvlink": f.nvlink, "vendor": f.vendor}
        for f in figures
    ]))  # fmt: skip
    return f"""(
        WITH figures AS (SELECT unnest(?::JSON::{_FIGURES}, recursive := true))
        SELECT o.*,
            o.price_per_gpu_hour / CASE WHEN exact.gpu IS NOT NULL THEN exact.dense_pflops
                                        ELSE any_form.dense_pflops END AS price_per_pflop_hour,
            CASE WHEN o.form_factor = 'SXM' THEN TRUE
                 WHEN exact.gpu IS NOT NULL THEN exact.nvlink
                 ELSE any_form.nvlink END AS nvlink,
            coalesce(any_form.vendor, exact.vendor) AS vendor
        FROM {source} AS o
        LEFT JOIN figures AS exact ON exact.gpu = o.gpu AND exact.form_factor = o.form_factor
        LEFT JOIN figures AS any_form ON any_form.gpu = o.gpu AND any_form.form_factor IS NULL
    )"""


def order_by(sort: SortKey) -> str:
    """The ORDER BY of an answer sorted by `sort` (unknown values last)."""
    return ", ".join(
        f"{name} {'DESC' if descending else 'ASC'} NULLS LAST"
        for name, descending in sort_columns(sort)
    )


def arrow_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of `table` as dicts (`Table.to_pylist`'s keys and values), each timestamp made
    once per distinct value: a snapshot's offers share one `observed_at`, and pyarrow's time
    zone conversion per value was half the time of turning 1,600 offers into dicts."""
    columns: list[list[Any]] = []
    for column in table.itercolumns():
        if pa.types.is_timestamp(column.type):
            encoded = pc.dictionary_encode(column.combine_chunks())
            distinct = encoded.dictionary.to_pylist()
            indices = encoded.indices.to_pylist()
            columns.append([None if i is None else distinct[i] for i in indices])
        else:
            columns.append(column.to_pylist())
    names = table.column_names
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def snapshots_source(
    snapshots: list[tuple[str, datetime]], as_of: datetime
) -> tuple[str, list[Any]]:
    """The observations of `snapshots` (each provider's (run, observed_at) as of `as_of`) as a
    subquery and its parameters: `observed_at` bounded by constants, so that DuckDB reads only
    the row groups of those snapshots."""
    times = [observed_at for _, observed_at in snapshots]
    # One parameter per run (a provider each): `IN (SELECT unnest(?))` plans slower.
    runs = ", ".join("?" * len(snapshots)) or "NULL"
    source = f"""(SELECT * FROM offer_observations
        WHERE run_id IN ({runs}) AND observed_at BETWEEN ? AND ?)"""
    return source, [*(run_id for run_id, _ in snapshots), min(times, default=as_of),
                    min(max(times, default=as_of), as_of)]  # fmt: skip


def read_offers(
    conn: duckdb.DuckDBPyConnection,
    figures: tuple[GpuFigure, ...],
    past: tuple[list[tuple[str, datetime]], datetime] | None = None,
) -> pa.Table:
    """Every offer of each provider's latest good snapshot (`current_offers`), or of the
    snapshots in force at a past time (`past`: each provider's (run, observed_at) then, as
    `SNAPSHOTS_AS_OF` finds them, and the time), with the derived columns, cheapest per
    GPU-hour first: what an in-memory copy (`warehouse.current.CurrentOffers`) is made of. The
    only SQL an offer question runs: which offers pass is the copy's to say."""
    params: list[Any] = []
    source, snapshot_params = "current_offers", list[Any]()
    if past is not None:
        source, snapshot_params = snapshots_source(*past)
    relation = offers_relation(source, figures, params)
    sql = f"SELECT * FROM {relation} ORDER BY {order_by(LOADED_ORDER)}"
    return conn.execute(sql, params + snapshot_params).to_arrow_table()
