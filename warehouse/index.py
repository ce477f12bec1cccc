"""The price index (methodology v1): its rollups, written at ingest, and the reads over them.

`index_rollups` holds, per interval (`1h`, `1d`), UTC bucket and provider, the per-GPU figures of
that provider's last good snapshot in the bucket: the cheapest available USD per GPU-hour (NULL
when the snapshot had none available) and the offer it came from. The index value of a bucket is
the median of the providers' values (DuckDB's `median` interpolates: the mean of the two middle
values when their number is even). A bucket where no provider contributes has no row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

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
    "rebuild_rollups",
    "roll_up_batch",
]

INDEX_INTERVALS = {"1h": timedelta(hours=1), "1d": timedelta(days=1)}
"""Bucket widths of the index; buckets start on the UTC hour or day."""


def bucket_start(at: datetime, interval: str) -> datetime:
    """The UTC start of the bucket holding `at`."""
    utc = at.astimezone(UTC)
    hour = utc.replace(minute=0, second=0, microsecond=0)
    return hour if interval == "1h" else hour.replace(hour=0)


_ROLL_UP = """
    INSERT INTO index_rollups BY NAME
    SELECT b.bucket_interval, b.t, provider, run_id, observed_at, gpu, form_factor, pricing,
           min(price_per_gpu_hour) FILTER (WHERE available) AS price_per_gpu_hour,
           arg_min(offer_id, price_per_gpu_hour) FILTER (WHERE available) AS offer_id
    FROM offer_batch,
         (VALUES ('1h', ?::TIMESTAMPTZ), ('1d', ?::TIMESTAMPTZ)) AS b(bucket_interval, t)
    WHERE gpu IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM index_rollups AS r
        WHERE r.provider = ? AND r.bucket_interval = b.bucket_interval AND r.t = b.t
          AND r.observed_at > ?
    )
    GROUP BY ALL
"""


def roll_up_batch(conn: duckdb.DuckDBPyConnection, provider: str, observed_at: datetime) -> None:
    """Make the run registered as `offer_batch` its provider's entry in the hour and day buckets
    of `observed_at`, unless a later snapshot of the provider already holds them (a replay of an
    older time). One DELETE and one INSERT, in the run's transaction."""
    hour, day = bucket_start(observed_at, "1h"), bucket_start(observed_at, "1d")
    conn.execute(
        """
        DELETE FROM index_rollups WHERE provider = ? AND observed_at <= ?
          AND ((bucket_interval = '1h' AND t = ?) OR (bucket_interval = '1d' AND t = ?))
        """,
        [provider, observed_at, hour, day],
    )
    conn.execute(_ROLL_UP, [hour, day, provider, observed_at])


def rebuild_rollups(conn: duckdb.DuckDBPyConnection) -> None:
    """`index_rollups` rebuilt from the runs and summaries (what migration 0013 does once, for
    bulk-built warehouses such as bench/history.py's); ingest keeps it up to date after that."""
    conn.execute("DELETE FROM index_rollups")
    conn.execute(
        """
        INSERT INTO index_rollups BY NAME
        WITH last_runs AS (
            SELECT i.bucket_interval,
                   make_timestamptz(epoch_us(time_bucket(i.width,
                       make_timestamp(epoch_us(r.observed_at))))) AS t,
                   r.provider,
                   arg_max(r.run_id, {'observed': r.observed_at, 'finished': r.finished_at})
                       AS run_id
            FROM collection_runs AS r,
                 (VALUES ('1h', INTERVAL 1 HOUR), ('1d', INTERVAL 1 DAY))
                     AS i(bucket_interval, width)
            WHERE r.status = 'ok'
            GROUP BY ALL
        )
        SELECT l.bucket_interval, l.t, s.provider, s.run_id, s.observed_at, s.gpu,
               s.form_factor, s.pricing, s.min_available_price AS price_per_gpu_hour,
               s.min_available_offer_id AS offer_id
        FROM last_runs AS l JOIN price_summaries AS s USING (run_id)
        ORDER BY l.t
        """
    )


@dataclass(frozen=True, slots=True)
class IndexFilters:
    gpus: frozenset[str]
    pricings: tuple[str, ...]
    interval: str
    since: datetime
    until: datetime
    form_factor: str | None = None
    """None: every form factor of the GPU counts (one value per provider: its cheapest)."""


def _where(f: IndexFilters, params: list[Any]) -> str:
    where = [
        "bucket_interval = ?",
        "pricing IN (SELECT unnest(?))",
        "gpu IN (SELECT unnest(?))",
        "t >= ?",
        "t < ?",
        "price_per_gpu_hour IS NOT NULL",
    ]
    params += [f.interval, list(f.pricings), sorted(f.gpus), f.since, f.until]
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
    cursor = conn.execute(sql, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def index_latest(conn: duckdb.DuckDBPyConnection, interval: str) -> list[dict[str, Any]]:
    """Per (gpu, pricing): the index value of its latest bucket with a contribution."""
    cursor = conn.execute(
        """
        SELECT gpu, pricing, arg_max(value, t) AS value, max(t) AS t FROM (
            SELECT gpu, pricing, t, median(price_per_gpu_hour) AS value FROM (
                SELECT gpu, pricing, t, provider, min(price_per_gpu_hour) AS price_per_gpu_hour
                FROM index_rollups
                WHERE bucket_interval = ? AND price_per_gpu_hour IS NOT NULL
                  AND t >= (SELECT max(t) FROM index_rollups WHERE bucket_interval = ?)
                           - INTERVAL 2 DAY
                GROUP BY ALL
            ) GROUP BY ALL
        ) GROUP BY ALL ORDER BY ALL
        """,
        [interval, interval],
    )
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def contributions(
    conn: duckdb.DuckDBPyConnection,
    gpus: frozenset[str],
    pricing: str,
    interval: str,
    t: datetime,
    form_factor: str | None,
) -> list[dict[str, Any]]:
    """Each provider's rows in one bucket: its last good snapshot there and, per GPU and form
    factor, the cheapest available price (NULL when none was available) and its offer."""
    params: list[Any] = [interval, t, pricing, sorted(gpus)]
    extra = ""
    if form_factor is not None:
        extra = " AND form_factor = ?"
        params.append(form_factor)
    cursor = conn.execute(
        f"""
        SELECT provider, run_id, observed_at, gpu, form_factor, price_per_gpu_hour, offer_id
        FROM index_rollups
        WHERE bucket_interval = ? AND t = ? AND pricing = ? AND gpu IN (SELECT unnest(?)){extra}
        ORDER BY provider, price_per_gpu_hour NULLS LAST, gpu, form_factor
        """,
        params,
    )
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def bucket_runs(
    conn: duckdb.DuckDBPyConnection, since: datetime, until: datetime
) -> list[dict[str, Any]]:
    """Per provider with a run observed in [since, until): good and failed runs, and the last
    good snapshot (run id, time)."""
    cursor = conn.execute(
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
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def known_providers(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Every provider that has ever run."""
    return [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT provider FROM collection_runs ORDER BY provider"
        ).fetchall()
    ]


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
