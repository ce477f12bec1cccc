"""Hourly and daily rollups, kept up to date at ingest: one small write per provider run.

- `index_rollups` (the price index, see `warehouse.index`): per interval, UTC bucket and
  provider, the per-GPU cheapest available price of the provider's last good snapshot in the
  bucket, with the offer it came from (an aggregator's resale of a cloud we collect directly is
  not counted: `warehouse.summaries.COUNTED_ONCE`).
- `history_rollups` (`/prices/history` at `1h` and `1d`): per interval, bucket, GPU, form factor,
  provider and pricing, the bucket statistics of `warehouse.history` (`BUCKET_AGGREGATES` over
  the bucket's per-snapshot summaries), recomputed from the summaries of that provider's bucket.
- `history_days` (the API's JSON of `/prices/history` over whole days): per UTC day and series,
  the day's `1d` point and its `1h` points, comma-joined, as `history_rollups` holds them.

All are replaced (`DELETE` + `INSERT`, DuckLake-compatible) for the hour and the day of each
run, in the run's transaction, after its summaries are written.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb

from warehouse.quality import SUSPECT_IN_BATCH
from warehouse.summaries import BUCKET_AGGREGATES, COUNTED_ONCE, POINT_JSON

__all__ = ["ROLLUP_INTERVALS", "bucket_start", "rebuild_rollups", "roll_up_run"]

ROLLUP_INTERVALS = {"1h": timedelta(hours=1), "1d": timedelta(days=1)}
"""Bucket widths kept rolled up; buckets start on the UTC hour or day."""


def bucket_start(at: datetime, interval: str) -> datetime:
    """The UTC start of the `1h` or `1d` bucket holding `at`."""
    hour = at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return hour if interval == "1h" else hour.replace(hour=0)


_BUCKETS = "(VALUES ('1h', ?::TIMESTAMPTZ), ('1d', ?::TIMESTAMPTZ)) AS b(bucket_interval, t)"
_THIS_PROVIDERS_BUCKETS = """
    provider = ? AND ((bucket_interval = '1h' AND t = ?) OR (bucket_interval = '1d' AND t = ?))
"""

_INDEX_ROLL_UP = f"""
    INSERT INTO index_rollups BY NAME
    SELECT b.bucket_interval, b.t, provider, run_id, observed_at, gpu, form_factor, pricing,
           min(price_per_gpu_hour) FILTER (WHERE available AND {COUNTED_ONCE})
               AS price_per_gpu_hour,
           arg_min(offer_id, price_per_gpu_hour) FILTER (WHERE available AND {COUNTED_ONCE})
               AS offer_id
    FROM offer_batch, {_BUCKETS}
    WHERE gpu IS NOT NULL AND {SUSPECT_IN_BATCH} AND NOT EXISTS (
        SELECT 1 FROM index_rollups AS r
        WHERE r.provider = ? AND r.bucket_interval = b.bucket_interval AND r.t = b.t
          AND r.observed_at > ?
    )
    GROUP BY ALL
"""

_HISTORY_ROLL_UP = f"""
    INSERT INTO history_rollups BY NAME
    SELECT *, {POINT_JSON} AS point_json FROM (
        SELECT b.bucket_interval, b.t, gpu, form_factor, provider, pricing, {BUCKET_AGGREGATES}
        FROM price_summaries AS s, {_BUCKETS}
        WHERE s.provider = ? AND s.observed_at >= ? AND s.observed_at < ?
          AND s.observed_at >= b.t
          AND s.observed_at < b.t + CASE b.bucket_interval WHEN '1h' THEN INTERVAL 1 HOUR
                                                          ELSE INTERVAL 1 DAY END
        GROUP BY ALL
    )
"""


def _history_days(where: str) -> str:
    """`history_days` rows from `history_rollups`, for the days of rows matching `where` (with
    `{r}` before each column)."""
    day = "make_timestamptz(epoch_us(time_bucket(INTERVAL 1 DAY, make_timestamp(epoch_us(t)))))"
    return f"""
        INSERT INTO history_days BY NAME
        SELECT d.t AS day, d.gpu, d.form_factor, d.provider, d.pricing, d.point_json AS day_json,
               h.hours_json, CAST(hash(d.point_json, h.hours_json) >> 1 AS BIGINT) AS points_hash
        FROM history_rollups AS d
        JOIN (
            SELECT {day} AS day, gpu, form_factor, provider, pricing,
                   string_agg(point_json, ',' ORDER BY t) AS hours_json
            FROM history_rollups WHERE bucket_interval = '1h' AND {where.format(r="")}
            GROUP BY ALL
        ) AS h ON h.day = d.t AND h.gpu = d.gpu AND h.provider = d.provider
              AND h.pricing = d.pricing AND h.form_factor IS NOT DISTINCT FROM d.form_factor
        WHERE d.bucket_interval = '1d' AND {where.format(r="d.")}
        ORDER BY day
    """


_RUN_DAY = "{r}provider = ? AND {r}t >= ? AND {r}t < ?"


def roll_up_run(conn: duckdb.DuckDBPyConnection, provider: str, observed_at: datetime) -> None:
    """Bring the hour and day of a run (registered as `offer_batch`, its summaries written) into
    both rollups. The index keeps the provider's last snapshot of each bucket, so a replay of an
    older time leaves a later snapshot's rows alone; history is recomputed for the bucket."""
    hour, day = bucket_start(observed_at, "1h"), bucket_start(observed_at, "1d")
    conn.execute(
        f"DELETE FROM index_rollups WHERE observed_at <= ? AND {_THIS_PROVIDERS_BUCKETS}",
        [observed_at, provider, hour, day],
    )
    conn.execute(_INDEX_ROLL_UP, [hour, day, provider, observed_at])
    conn.execute(
        f"DELETE FROM history_rollups WHERE {_THIS_PROVIDERS_BUCKETS}", [provider, hour, day]
    )
    next_day = day + ROLLUP_INTERVALS["1d"]
    conn.execute(_HISTORY_ROLL_UP, [hour, day, provider, day, next_day])
    conn.execute("DELETE FROM history_days WHERE provider = ? AND day = ?", [provider, day])
    conn.execute(_history_days(_RUN_DAY), [provider, day, next_day] * 2)


def rebuild_rollups(conn: duckdb.DuckDBPyConnection) -> None:
    """The rollups rebuilt from the runs and summaries (what migrations 0013 and 0016 do once, for
    bulk-built warehouses such as bench/history.py's); ingest keeps them up to date after."""
    widths = "(VALUES ('1h', INTERVAL 1 HOUR), ('1d', INTERVAL 1 DAY)) AS i(bucket_interval, width)"
    start = "make_timestamptz(epoch_us(time_bucket(i.width, make_timestamp(epoch_us({0})))))"
    conn.execute("DELETE FROM index_rollups")
    conn.execute(
        f"""
        INSERT INTO index_rollups BY NAME
        WITH last_runs AS (
            SELECT i.bucket_interval, {start.format("r.observed_at")} AS t, r.provider,
                   arg_max(r.run_id, {{'observed': r.observed_at, 'finished': r.finished_at}})
                       AS run_id
            FROM collection_runs AS r, {widths}
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
    conn.execute("DELETE FROM history_rollups")
    conn.execute(
        f"""
        INSERT INTO history_rollups BY NAME
        SELECT *, {POINT_JSON} AS point_json FROM (
            SELECT i.bucket_interval, {start.format("observed_at")} AS t,
                   gpu, form_factor, provider, pricing, {BUCKET_AGGREGATES}
            FROM price_summaries, {widths}
            GROUP BY ALL
        )
        ORDER BY t
        """
    )
    conn.execute("DELETE FROM history_days")
    conn.execute(_history_days("TRUE"))
