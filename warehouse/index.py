"""The price index (methodology v1): the reads over its rollups (`warehouse.rollups`).

`index_rollups` holds, per interval (`1h`, `1d`), UTC bucket and provider, the per-GPU figures of
that provider's last good snapshot in the bucket: the cheapest available USD per GPU-hour (NULL
when the snapshot had none available) and the offer it came from. The index value of a bucket is
the median of the providers' values (DuckDB's `median` interpolates: the mean of the two middle
values when their number is even). A bucket where no provider contributes has no row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from warehouse.db import dict_rows
from warehouse.rollups import ROLLUP_INTERVALS, bucket_start

__all__ = [
    "INDEX_INTERVALS",
    "IndexFilters",
    "bucket_start",
    "bucket_runs",
    "contributions",
    "hours_with_snapshots",
    "index_latest",
    "index_points",
    "index_sql",
    "known_providers",
]

INDEX_INTERVALS = ROLLUP_INTERVALS
"""Bucket widths of the index; buckets start on the UTC hour or day."""


@dataclass(frozen=True, slots=True)
class IndexFilters:
    gpus: frozenset[str]
    pricings: tuple[str, ...]
    interval: str
    since: datetime
    until: datetime
    form_factor: str | None = None
    """None: every form factor of the GPU counts (one value per provider: its cheapest)."""
    excluded_providers: frozenset[str] = frozenset()
    """Providers the methodology leaves out (their rollups stay, for a later methodology)."""


def _where(f: IndexFilters, params: list[Any]) -> str:
    where = [
        "bucket_interval = ?",
        "pricing IN (SELECT unnest(?))",
        "gpu IN (SELECT unnest(?))",
        "t >= ?",
        "t < ?",
        "price_per_gpu_hour IS NOT NULL",
        "provider NOT IN (SELECT unnest(?::VARCHAR[]))",
    ]
    params += [f.interval, list(f.pricings), sorted(f.gpus), f.since, f.until,
               sorted(f.excluded_providers)]  # fmt: skip
    if f.form_factor is not None:
        where.append("form_factor = ?")
        params.append(f.form_factor)
    return " AND ".join(where)


def index_sql(f: IndexFilters) -> tuple[str, list[Any]]:
    """`gpu, pricing, form_factor, t, value, providers` per bucket with a contribution."""
    params: list[Any] = [f.form_factor]
    sql = f"""
        SELECT gpu, pricing, ?::VARCHAR AS form_factor, t,
               median(price_per_gpu_hour) AS value, count(*) AS providers
        FROM (
            SELECT gpu, pricing, t, provider, min(price_per_gpu_hour) AS price_per_gpu_hour
            FROM index_rollups WHERE {_where(f, params)}
            GROUP BY gpu, pricing, t, provider
        )
        GROUP BY gpu, pricing, t
        ORDER BY gpu, pricing, t
    """
    return sql, params


def index_points(conn: duckdb.DuckDBPyConnection, f: IndexFilters) -> list[dict[str, Any]]:
    """The index's points, as `index_sql` orders them."""
    sql, params = index_sql(f)
    return dict_rows(conn, sql, params)


def index_latest(
    conn: duckdb.DuckDBPyConnection, interval: str, excluded: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Per (gpu, pricing): the index value of its latest bucket with a contribution, providers
    in `excluded` left out."""
    return dict_rows(
        conn,
        """
        SELECT gpu, pricing, arg_max(value, t) AS value, max(t) AS t FROM (
            SELECT gpu, pricing, t, median(price_per_gpu_hour) AS value FROM (
                SELECT gpu, pricing, t, provider, min(price_per_gpu_hour) AS price_per_gpu_hour
                FROM index_rollups
                WHERE bucket_interval = ? AND price_per_gpu_hour IS NOT NULL
                  AND provider NOT IN (SELECT unnest(?::VARCHAR[]))
                  AND t >= (SELECT max(t) FROM index_rollups WHERE bucket_interval = ?)
                           - INTERVAL 2 DAY
                GROUP BY ALL
            ) GROUP BY ALL
        ) GROUP BY ALL ORDER BY ALL
        """,
        [interval, sorted(excluded), interval],
    )


def contributions(
    conn: duckdb.DuckDBPyConnection,
    gpus: frozenset[str],
    pricing: str,
    interval: str,
    t: datetime,
    form_factor: str | None,
    excluded: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """Each provider's rows in one bucket (but those in `excluded`), cheapest first: per GPU and
    form factor, the cheapest available price of its last good snapshot there (`value`, NULL
    when none was available), its offer and that snapshot (`run_id`, `snapshot_at`)."""
    params: list[Any] = [interval, t, pricing, sorted(gpus), sorted(excluded)]
    extra = ""
    if form_factor is not None:
        extra = " AND form_factor = ?"
        params.append(form_factor)
    return dict_rows(
        conn,
        f"""
        SELECT provider, price_per_gpu_hour AS value, offer_id, form_factor, run_id,
               observed_at AS snapshot_at
        FROM index_rollups
        WHERE bucket_interval = ? AND t = ? AND pricing = ? AND gpu IN (SELECT unnest(?))
          AND provider NOT IN (SELECT unnest(?::VARCHAR[])){extra}
        ORDER BY provider, price_per_gpu_hour NULLS LAST, gpu, form_factor
        """,
        params,
    )


def bucket_runs(
    conn: duckdb.DuckDBPyConnection, since: datetime, until: datetime
) -> list[dict[str, Any]]:
    """Per provider with a run observed in [since, until): good and failed runs, and the last
    good snapshot (run id, time)."""
    return dict_rows(
        conn,
        """
        SELECT provider, count(*) FILTER (WHERE status = 'ok') AS good,
               count(*) FILTER (WHERE status <> 'ok') AS failed,
               arg_max(run_id, {'observed': observed_at, 'finished': finished_at})
                   FILTER (WHERE status = 'ok') AS run_id,
               max(observed_at) FILTER (WHERE status = 'ok') AS observed_at
        FROM collection_runs WHERE observed_at >= ? AND observed_at < ?
        GROUP BY provider ORDER BY provider
        """,
        [since, until],
    )


def known_providers(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Every provider that has ever run."""
    rows = conn.execute("SELECT DISTINCT provider FROM collection_runs ORDER BY provider")
    return [row[0] for row in rows.fetchall()]


def hours_with_snapshots(conn: duckdb.DuckDBPyConnection, since: datetime, until: datetime) -> int:
    """UTC hours in [since, until) with at least one good snapshot of any provider."""
    row = conn.execute(
        """
        SELECT count(DISTINCT t) FROM index_rollups
        WHERE bucket_interval = '1h' AND t >= ? AND t < ?
        """,
        [since, until],
    ).fetchone()
    return int(row[0]) if row else 0
