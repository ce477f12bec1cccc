"""Price history over the per-snapshot summaries, "as of" snapshot times, pruning and exports.

Bucket statistics (see warehouse/README.md): with one snapshot in a bucket they are that
snapshot's exact min / p25 / median / max over listed offers. With several, min and max are the
extremes over the snapshots, p25 and median the medians of the snapshots' p25 and median, and
`offers` / `available` the mean count per snapshot, rounded; `min_available` is the lowest
price among offers rentable at the snapshot (NULL when none was). Series are per form factor
(SXM and PCIe apart). A bucket without a good snapshot (provider down) has no row: a gap, never
a zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.db import dict_rows
from warehouse.offers import SNAPSHOTS_AS_OF, OfferFilters, scope_conditions
from warehouse.rollups import ROLLUP_INTERVALS, bucket_start
from warehouse.summaries import BUCKET_AGGREGATES, POINT_JSON, SUMMARY_AGGREGATES

__all__ = [
    "NEWEST_GOOD_RUNS",
    "HistoryFilters",
    "cheapest_available_at",
    "copy_partitioned_parquet",
    "day_points_column",
    "history_sql",
    "points_json_sql",
    "with_point_json",
    "export_query",
    "export_table",
    "price_history",
    "prune_before",
    "snapshot_times",
]

BUCKETS = {"1h": "1 hour", "6h": "6 hours", "1d": "1 day", "1w": "1 week"}
"""Supported intervals; weeks start on Monday (DuckDB's time_bucket origin 2000-01-03)."""


@dataclass(frozen=True, slots=True)
class HistoryFilters:
    scope: OfferFilters
    """Which offers (`gpus` set); `include_unavailable` true: statistics cover listed offers."""
    interval: str
    since: datetime
    until: datetime


def _summaries_from_raw(conditions: list[str]) -> str:
    """Per-snapshot summaries rebuilt from raw observations, for filters summaries lack."""
    return f"""
        SELECT run_id, provider, observed_at, gpu, form_factor, pricing, {SUMMARY_AGGREGATES}
        FROM offer_observations
        WHERE gpu IS NOT NULL AND {" AND ".join(conditions or ["TRUE"])}
        GROUP BY run_id, provider, observed_at, gpu, form_factor, pricing
    """


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def price_history(conn: duckdb.DuckDBPyConnection, f: HistoryFilters) -> list[dict[str, Any]]:
    """One row per (gpu, form factor, provider, pricing, bucket) with a good snapshot."""
    sql, params = history_sql(f)
    # Bucket starts travel as epoch microseconds: building aware datetimes here is cheaper than
    # the driver's per-value time zone conversion (a year of 1h buckets is 50k+ rows).
    rows = dict_rows(
        conn,
        f"SELECT * REPLACE (epoch_us(t) AS t) FROM ({sql}) "
        "ORDER BY gpu, form_factor NULLS FIRST, provider, pricing, t",
        params,
    )
    for row in rows:
        row["t"] = _EPOCH + timedelta(microseconds=row["t"])
    return rows


def with_point_json(history: str) -> str:
    """A history query's rows with their `point_json` (see `POINT_JSON`), one point each (no
    `points_hash`: see `history_sql`)."""
    return f"SELECT *, {POINT_JSON} AS point_json, NULL::BIGINT AS points_hash FROM ({history})"


def points_json_sql(history: str) -> str:
    """Wrap a history query with `point_json` (`history_sql(..., with_json=True)`, or any query
    through `with_point_json`) so that DuckDB returns one row per series with its points already
    as a JSON array: the API path, which would otherwise spend most of a year of 1 h buckets
    turning rows into Python objects and back."""
    return f"""
        SELECT gpu, form_factor, provider, pricing,
               '[' || string_agg(point_json, ',' ORDER BY t) || ']' AS points
        FROM ({history}) GROUP BY ALL
        ORDER BY gpu, form_factor NULLS FIRST, provider, pricing
    """


def _bucket_start(interval: str) -> str:
    """`time_bucket` over the UTC wall clock as a plain TIMESTAMP, back to TIMESTAMPTZ.

    On a TIMESTAMPTZ, day and week buckets go through ICU calendar arithmetic for every row
    (slow over a year of summaries: bench/history.py); on the epoch microseconds they are
    integer arithmetic.
    Same buckets, since the warehouse's time zone is UTC.
    """
    return (
        f"make_timestamptz(epoch_us(time_bucket(INTERVAL '{BUCKETS[interval]}', "
        "make_timestamp(epoch_us(observed_at)))))"
    )


_SUMMARISED = ("gpus", "providers", "pricing", "form_factor", "include_unavailable", "gpu_figures")
"""The scope fields per-snapshot summaries answer: their key's filters, and `gpu_figures` (not a
filter: what derived columns are made from)."""


def history_sql(
    f: HistoryFilters, *, rolled_up: bool = True, with_json: bool = False, day_json: bool = True
) -> tuple[str, list[Any]]:
    """The history points of `f`; `rolled_up=False` computes every bucket from the per-snapshot
    summaries (the rollups' reference, in tests and bench/history.py); `with_json` adds each
    point's `point_json` (kept in the rollups, computed for other buckets), whole UTC days as
    pieces of several points with their `points_hash` (`day_json=False`: the hash alone)."""
    params: list[Any] = []

    def observed(start: datetime, end: datetime) -> list[str]:
        """The scope's conditions and `observed_at` in [start, end), their parameters added."""
        where = scope_conditions(f.scope, params) + ["observed_at >= ?", "observed_at < ?"]
        params.extend((start, end))
        return where

    def points(sql: str) -> str:
        return with_point_json(sql) if with_json else sql

    # Summaries are per snapshot, GPU, form factor, provider and pricing, not per place or node:
    # any other filter rebuilds them from the raw observations, which cover the retention
    # window. All filters go inside, ahead of the per-snapshot quantiles: DuckDB does not push
    # the `IN (SELECT unnest(?))` semi join below the GROUP BY, so outside they would rebuild
    # summaries for every GPU first.
    summarised = OfferFilters(**{name: getattr(f.scope, name) for name in _SUMMARISED})
    if f.scope != summarised or not f.scope.include_unavailable:
        raw = _summaries_from_raw(observed(f.since, f.until))
        return points(_bucketed(f, f"({raw})", ["TRUE"])), params
    full = _full_buckets(f) if rolled_up else None
    if full is None:
        return points(_bucketed(f, "price_summaries", observed(f.since, f.until))), params
    # Whole buckets come from the rollups; the partial ones at either end (a `since` or `until`
    # inside a bucket) from the summaries of their snapshots inside [since, until) only.
    low, high = full
    if with_json:
        whole = _json_pieces(f, low, high, params, day_json)
    else:
        rolled = ["bucket_interval = ?", "t >= ?", "t < ?"]
        params += [f.interval, low, high]
        rolled += scope_conditions(f.scope, params)
        whole = f"""
            SELECT gpu, form_factor, provider, pricing, t, min, min_available, p25, median, max,
                   offers, available, snapshots
            FROM history_rollups WHERE {" AND ".join(rolled)}
        """
    # Each partial bucket on its own plain time range, so zonemaps skip the rest of the year.
    edge_buckets = [
        points(_bucketed(f, "price_summaries", observed(start, end), ordered=False))
        for start, end in ((f.since, low), (high, f.until))
        if start < end
    ]
    sql = f"""
        SELECT * FROM (
            {whole}
            {"".join(f" UNION ALL BY NAME {edge}" for edge in edge_buckets)}
        )
        {"" if with_json else "ORDER BY gpu, form_factor NULLS FIRST, provider, pricing, t"}
    """  # the JSON path orders inside `points_json_sql` or `price_history_json`
    return sql, params


def _json_pieces(
    f: HistoryFilters, low: datetime, high: datetime, params: list[Any], day_json: bool
) -> str:
    """The points of the whole buckets in `[low, high)` as the API's JSON, in pieces of one or
    more points (`gpu, form_factor, provider, pricing, t, point_json, points_hash`, `t` the first
    point's): each whole UTC day from `history_days` (its `1d` point, or its `1h` points already
    joined; with `day_json` false only its hash), the hours of a partial day at either end from
    `history_rollups` (no hash)."""
    first_day = bucket_start(low, "1d")
    if first_day < low:
        first_day += ROLLUP_INTERVALS["1d"]
    last_day = bucket_start(high, "1d")
    hours = [(low, first_day), (last_day, high)] if first_day < last_day else [(low, high)]
    pieces = []
    for start, end in hours:
        if start < end:
            where = ["bucket_interval = ?", "t >= ?", "t < ?"]
            params += [f.interval, start, end]
            where += scope_conditions(f.scope, params)
            pieces.append(
                "SELECT gpu, form_factor, provider, pricing, t, point_json, "
                f"NULL::BIGINT AS points_hash FROM history_rollups WHERE {' AND '.join(where)}"
            )
    if first_day < last_day:
        where = ["day >= ?", "day < ?"]
        params += [first_day, last_day]
        where += scope_conditions(f.scope, params)
        column = day_points_column(f.interval) if day_json else "NULL::VARCHAR"
        pieces.append(
            f"SELECT gpu, form_factor, provider, pricing, day AS t, {column} AS point_json, "
            f"points_hash FROM history_days WHERE {' AND '.join(where)}"
        )
    return " UNION ALL ".join(pieces)


def day_points_column(interval: str) -> str:
    """The `history_days` column holding a day's points at `interval` (`1h` or `1d`)."""
    return "day_json" if interval == "1d" else "hours_json"


def _full_buckets(f: HistoryFilters) -> tuple[datetime, datetime] | None:
    """`[low, high)`: the rolled-up buckets wholly inside [since, until); None when the interval
    is not rolled up or no whole bucket fits."""
    width = ROLLUP_INTERVALS.get(f.interval)
    if width is None:
        return None
    low = bucket_start(f.since, f.interval)
    if low < f.since:
        low += width
    high = bucket_start(f.until, f.interval)
    return (low, high) if low < high else None


def _bucketed(f: HistoryFilters, source: str, where: list[str], *, ordered: bool = True) -> str:
    """Per-snapshot summaries (`source`) grouped into buckets: the statistics of a history point."""
    order = "ORDER BY gpu, form_factor NULLS FIRST, provider, pricing, t" if ordered else ""
    return f"""
        SELECT gpu, form_factor, provider, pricing,
               {_bucket_start(f.interval)} AS t, {BUCKET_AGGREGATES}
        FROM {source} AS s
        WHERE {" AND ".join(where)}
        GROUP BY ALL
        {order}
    """


def snapshot_times(conn: duckdb.DuckDBPyConnection, as_of: datetime) -> list[dict[str, Any]]:
    """Each provider's last good snapshot at or before `as_of`: run, observed time, size."""
    return dict_rows(
        conn,
        f"SELECT provider, run_id, observed_at, offer_count FROM ({SNAPSHOTS_AS_OF}) "
        "ORDER BY provider",
        [as_of],
    )


def cheapest_available_at(
    conn: duckdb.DuckDBPyConnection,
    at: datetime,
    lookback: timedelta,
    providers: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """The cheapest available USD per GPU-hour per (gpu, form_factor, pricing) across providers,
    each provider as of its last good snapshot at or before `at` and no older than `lookback`."""
    params: list[Any] = [at, at - lookback]
    where = ["observed_at <= ?", "observed_at > ?"]
    if providers is not None:
        where.append("provider IN (SELECT unnest(?))")
        params.append(sorted(providers))
    return dict_rows(
        conn,
        f"""
        SELECT gpu, form_factor, pricing, min(min_available_price) AS price_per_gpu_hour
        FROM (
            SELECT * FROM price_summaries WHERE {" AND ".join(where)}
            QUALIFY observed_at = max(observed_at) OVER (PARTITION BY provider)
        )
        WHERE min_available_price IS NOT NULL
        GROUP BY ALL
        """,
        params,
    )


NEWEST_GOOD_RUNS = """
    SELECT run_id FROM collection_runs WHERE status = 'ok'
    QUALIFY row_number() OVER (
        PARTITION BY provider ORDER BY observed_at DESC, finished_at DESC
    ) = 1
"""
"""Each provider's newest good snapshot: the run `current_offers` reads, whole, suspect outliers
included (the view holds them out of answers; retention must not drop them, and its quarantined
records are the latest ones)."""


def prune_before(conn: duckdb.DuckDBPyConnection, cutoff: datetime) -> dict[str, int]:
    """Delete raw observations and quarantined records observed before `cutoff`, except the
    observations of each provider's newest good snapshot (however old, and all of it: suspect
    outliers that `current_offers` holds out too, even when every offer of the run is one).

    Their summaries stay: they were written in the same transaction as the snapshot.
    """
    deleted = {}
    for table, kept in (
        ("offer_observations", f" AND run_id NOT IN ({NEWEST_GOOD_RUNS})"),
        ("quarantine", ""),
    ):
        row = conn.execute(f"DELETE FROM {table} WHERE observed_at < ?{kept}", [cutoff]).fetchone()
        deleted[table] = int(row[0]) if row else 0
    return deleted


def export_query(
    conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any], target: Path, fmt: str
) -> None:
    """Write the result of `sql` to `target` as CSV (header, ISO times, text cells neutralized:
    `csv_safe`) or Parquet."""
    options = (
        "FORMAT csv, HEADER true, TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%S.%fZ'"
        if fmt == "csv"
        else "FORMAT parquet, COMPRESSION zstd"
    )
    if fmt == "csv":
        sql = csv_safe(conn, sql, params)
    conn.execute(f"COPY ({sql}) TO '{_quoted(target)}' ({options})", params)


def export_table(conn: duckdb.DuckDBPyConnection, table: pa.Table, target: Path, fmt: str) -> None:
    """Write `table` (Arrow rows: e.g. an answer's offers) to `target` as `export_query` writes
    a query's rows."""
    name = f"exported_{id(table)}"
    conn.register(name, table)
    try:
        export_query(conn, f"SELECT * FROM {name}", [], target, fmt)
    finally:
        conn.unregister(name)


FORMULA_START = r"^[=+\-@\t\r]"
"""OWASP's CSV injection rule: a cell starting with =, +, -, @, tab or CR is a formula to a
spreadsheet, so such a text cell is written with a leading `'`. Numbers (-1.5) stay numbers:
numeric columns are never touched, and text that reads as a number is kept as it is."""


def csv_safe(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> str:
    """`sql` with each text column's formula-like cells prefixed by `'`."""
    described = conn.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description
    texts = [_ident(name) for name, kind, *_ in described if str(kind) == "VARCHAR"]
    if not texts:
        return sql
    replaced = ", ".join(
        f"CASE WHEN regexp_matches({n}, '{FORMULA_START}') AND TRY_CAST({n} AS DOUBLE) IS NULL "
        f"THEN concat('''', {n}) ELSE {n} END AS {n}"
        for n in texts
    )
    return f"SELECT * REPLACE ({replaced}) FROM ({sql})"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def copy_partitioned_parquet(
    conn: duckdb.DuckDBPyConnection, since: datetime, until: datetime, target: Path
) -> int:
    """Raw observations in [since, until) as Hive-partitioned Parquet: date=YYYY-MM-DD/provider=."""
    count = conn.execute(
        "SELECT count(*) FROM offer_observations WHERE observed_at >= ? AND observed_at < ?",
        [since, until],
    ).fetchone()
    conn.execute(
        f"""
        COPY (
            SELECT *, strftime(observed_at, '%Y-%m-%d') AS date
            FROM offer_observations WHERE observed_at >= ? AND observed_at < ?
            ORDER BY observed_at
        ) TO '{_quoted(target)}'
        (FORMAT parquet, PARTITION_BY (date, provider), OVERWRITE_OR_IGNORE true)
        """,
        [since, until],
    )
    return int(count[0]) if count else 0


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
