"""Every read and write the application makes, as named functions over a cursor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import duckdb
import pyarrow as pa

from warehouse.db import dict_rows, insert_row
from warehouse.errors import WarehouseError
from warehouse.history import NEWEST_GOOD_RUNS
from warehouse.offers import NEWEST_SNAPSHOT
from warehouse.quality import OutlierBounds, flag_price_outliers
from warehouse.rollups import roll_up_run
from warehouse.summaries import SUMMARISE_BATCH

__all__ = [
    "RunRow",
    "insert_run",
    "current_price_stats",
    "current_regions",
    "latest_runs",
    "run_stats",
    "provider_status",
    "quarantine_counts",
    "quarantined",
    "unknown_gpus",
]


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    provider: str
    started_at: datetime
    finished_at: datetime
    observed_at: datetime
    status: Literal["ok", "failed"]
    offer_count: int
    reject_count: int
    error: str | None
    source: str


def insert_run(
    conn: duckdb.DuckDBPyConnection,
    run: RunRow,
    offers: pa.Table | None = None,
    rejects: pa.Table | None = None,
    outliers: OutlierBounds | None = None,
) -> None:
    """Write one provider run: its run row and, in bulk, its offers and quarantined records.

    `offers` and `rejects` are Arrow tables whose columns are stored `BY NAME`; the schema they
    follow is the scrapers' (`scrapers.models.OFFER_SCHEMA`), checked here against the columns
    the migrations made, not declared a second time. Call inside `Warehouse.transaction()` so
    that a run is stored whole or not at all. The provider's current offers are not written
    again: `current_offers` is a view of each provider's newest good snapshot (migration 0017).
    With `outliers`, the run's price outliers are flagged (warehouse.quality) before the index
    rolls up, so an unconfirmed low outlier never enters it.
    """
    insert_row(conn, "collection_runs", run)
    if offers is not None and offers.num_rows:
        batch = offers.append_column("run_id", pa.array([run.run_id] * offers.num_rows))
        conn.register("offer_batch", batch)
        try:
            _check_columns(conn, "offer_batch", "offer_observations")
            conn.execute("INSERT INTO offer_observations BY NAME SELECT * FROM offer_batch")
            if outliers is not None:
                flag_price_outliers(conn, run.run_id, run.provider, outliers)
            conn.execute(SUMMARISE_BATCH)
            roll_up_run(conn, run.provider, run.observed_at)
        finally:
            conn.unregister("offer_batch")
    if rejects is not None and rejects.num_rows:
        batch = rejects.append_column("run_id", pa.array([run.run_id] * rejects.num_rows))
        conn.register("reject_batch", batch)
        try:
            _check_columns(conn, "reject_batch", "quarantine")
            conn.execute("INSERT INTO quarantine BY NAME SELECT * FROM reject_batch")
        finally:
            conn.unregister("reject_batch")


def _check_columns(conn: duckdb.DuckDBPyConnection, batch: str, table: str) -> None:
    """Every column of `batch` exists in `table` with the type it is stored as, or one error."""
    stored = dict(
        conn.execute(
            "SELECT column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() AND table_name = ?",
            [table],
        ).fetchall()
    )
    given = conn.execute(f"DESCRIBE SELECT * FROM {batch}").fetchall()
    wrong = [
        f"{name} {type_} (stored: {stored.get(name, 'no such column')})"
        for name, type_, *_ in given
        if stored.get(name) != type_
    ]
    if wrong:
        raise WarehouseError(f"the batch does not fit table {table}: {', '.join(wrong)}")


def unknown_gpus(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """GPU names in the latest snapshots that the catalog does not know, with where seen."""
    return dict_rows(
        conn,
        """
        SELECT gpu_raw, list(DISTINCT provider ORDER BY provider) AS providers,
               count(*) AS offers, max(observed_at) AS last_observed_at
        FROM current_offers
        WHERE gpu IS NULL
        GROUP BY gpu_raw ORDER BY offers DESC, gpu_raw
        """,
    )


def latest_runs(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Each provider's most recent run, whatever its status."""
    return dict_rows(
        conn,
        """
        SELECT * FROM collection_runs
        QUALIFY row_number() OVER (PARTITION BY provider ORDER BY started_at DESC) = 1
        ORDER BY provider
        """,
    )


def provider_status(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per provider: its latest run, and its latest successful snapshot (time and size).

    Aggregates (`arg_max`), not window functions: a year of runs is ~200,000 rows, and a
    hash aggregate reads them without sorting them.
    """
    return dict_rows(
        conn,
        f"""
        WITH last_run AS (
            SELECT provider, arg_max({{'at': started_at, 'finished': finished_at,
                                       'status': status, 'error': error}}, started_at) AS r
            FROM collection_runs GROUP BY provider
        ),
        last_ok AS (
            SELECT provider, arg_max({{'finished': finished_at, 'observed': observed_at,
                                       'offers': offer_count, 'run_id': run_id}},
                                     {NEWEST_SNAPSHOT}) AS o
            FROM collection_runs WHERE status = 'ok' GROUP BY provider
        ),
        last_error AS (
            SELECT provider, arg_max({{'at': started_at, 'error': error}}, started_at) AS e
            FROM collection_runs WHERE status = 'failed' GROUP BY provider
        )
        SELECT provider, r.at AS last_run_at, r.finished AS last_finished_at,
               r.status AS last_status, r.error AS last_error,
               o.finished AS last_success_at, o.observed AS observed_at,
               coalesce(o.offers, 0) AS offer_count, o.run_id AS snapshot_run_id,
               e.at AS last_failure_at, e.error AS last_failure_error
        FROM last_run
        LEFT JOIN last_ok USING (provider)
        LEFT JOIN last_error USING (provider)
        ORDER BY provider
        """,
    )


def quarantined(
    conn: duckdb.DuckDBPyConnection, provider: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """Most recent quarantined records, newest first."""
    return dict_rows(
        conn,
        """
        SELECT q.provider, q.record_id, q.reason, q.raw, q.observed_at, q.run_id
        FROM quarantine q
        WHERE ?::VARCHAR IS NULL OR q.provider = ?
        ORDER BY q.observed_at DESC, q.provider, q.record_id
        LIMIT ?
        """,
        [provider, provider, limit],
    )


def quarantine_counts(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Quarantined records per provider and reason in each provider's latest run."""
    return dict_rows(
        conn,
        f"""
        SELECT provider, count(*) AS records, max(observed_at) AS last_observed_at
        FROM quarantine WHERE run_id IN ({NEWEST_GOOD_RUNS})
        GROUP BY provider ORDER BY provider
        """,
    )


def current_price_stats(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per (gpu, provider, pricing) in the current snapshots: lowest available price, counts."""
    return dict_rows(
        conn,
        """
        SELECT gpu, provider, pricing,
               min(price_per_gpu_hour) FILTER (WHERE available) AS lowest_price,
               count(*) AS offers, count(*) FILTER (WHERE available) AS available
        FROM current_offers WHERE gpu IS NOT NULL
        GROUP BY ALL ORDER BY ALL
        """,
    )


def run_stats(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per provider: runs and failures so far, and the duration of the last run."""
    return dict_rows(
        conn,
        """
        SELECT provider, count(*) AS runs, count(*) FILTER (WHERE status = 'failed') AS failures,
               arg_max(epoch(finished_at) - epoch(started_at), started_at) AS last_seconds
        FROM collection_runs GROUP BY provider ORDER BY provider
        """,
    )


def current_regions(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Each (provider, region) in the current snapshots, its location and how many offers."""
    return dict_rows(
        conn,
        """
        SELECT provider, region, country, continent, eea, eu, count(*) AS offers
        FROM current_offers GROUP BY ALL ORDER BY provider, region NULLS LAST
        """,
    )
