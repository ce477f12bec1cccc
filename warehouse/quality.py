"""Each provider run's quality (migration 0032): its row, unknown GPU spellings, reject reasons and
price outliers, written in the run's transaction, and the named reads `/quality`, `/metrics`, the
page and the provider-health alerts make of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from warehouse.db import dict_rows, insert_row

__all__ = [
    "OutlierBounds",
    "QualityRow",
    "flag_price_outliers",
    "insert_quality",
    "latest_quality",
    "outliers_of_runs",
    "quality_runs",
    "reject_reasons_of_runs",
    "unknown_gpus_of_runs",
]


@dataclass(frozen=True, slots=True)
class OutlierBounds:
    """An available offer is an outlier below `low` or above `high` times the median per-GPU
    price of its GPU and pricing over every provider's available offers (its own included)."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class QualityRow:
    run_id: str
    provider: str
    observed_at: datetime
    state: str
    offer_count: int
    resolved_count: int
    reject_count: int
    unknown_names: int
    shape_json: str | None
    fields_added: str | None
    fields_missing: str | None
    degraded: bool
    reasons: str | None


def insert_quality(
    conn: duckdb.DuckDBPyConnection,
    row: QualityRow,
    unknowns: list[tuple[str, int, str]],
    reasons: list[tuple[str, int]],
) -> None:
    """One run's quality row, its unknown spellings (name, offers, example offer_id) and its
    reject reasons (reason, records)."""
    insert_row(conn, "run_quality", row)
    if unknowns:
        conn.executemany(  # a handful of names per run
            "INSERT INTO run_unknown_gpus VALUES (?, ?, ?, ?, ?)",
            [[row.run_id, row.provider, name, n, example] for name, n, example in unknowns],
        )
    if reasons:
        conn.executemany(
            "INSERT INTO run_reject_reasons VALUES (?, ?, ?, ?)",
            [[row.run_id, row.provider, reason, n] for reason, n in reasons],
        )


_FLAG_OUTLIERS = """
    INSERT INTO price_outliers BY NAME
    WITH pool AS (
        SELECT gpu, pricing, price_per_gpu_hour FROM current_offers
        WHERE available AND gpu IS NOT NULL AND provider <> $provider
        UNION ALL
        SELECT gpu, pricing, price_per_gpu_hour FROM offer_batch
        WHERE available AND gpu IS NOT NULL
    ),
    medians AS (
        SELECT gpu, pricing, median(price_per_gpu_hour) AS median_per_gpu_hour
        FROM pool GROUP BY gpu, pricing
    ),
    previous_run AS (
        SELECT arg_max(run_id, observed_at) AS run_id FROM collection_runs
        WHERE provider = $provider AND status = 'ok' AND run_id <> $run_id
    ),
    flagged AS (
        SELECT b.run_id, b.provider, b.offer_id, b.pricing, b.gpu, b.price_per_gpu_hour,
               m.median_per_gpu_hour, b.observed_at,
               CASE WHEN b.price_per_gpu_hour < m.median_per_gpu_hour * $low THEN 'low'
                    ELSE 'high' END AS side
        FROM offer_batch AS b JOIN medians AS m USING (gpu, pricing)
        WHERE b.available AND (b.price_per_gpu_hour < m.median_per_gpu_hour * $low
                               OR b.price_per_gpu_hour > m.median_per_gpu_hour * $high)
    )
    SELECT f.*, NOT EXISTS (
        SELECT 1 FROM price_outliers AS p, previous_run AS r
        WHERE p.run_id = r.run_id AND p.offer_id = f.offer_id AND p.pricing = f.pricing
          AND p.side = f.side
    ) AS suspect
    FROM flagged AS f
"""


def flag_price_outliers(
    conn: duckdb.DuckDBPyConnection, run_id: str, provider: str, bounds: OutlierBounds
) -> None:
    """Flag this run's outliers (its offers registered as `offer_batch`, its run row written).

    An outlier is *suspect* (unconfirmed) unless the provider's previous good run flagged the
    same offer on the same side: held out of `current_offers`, hence of every answer, and of
    the index, until a second run in a row confirms it (one rule for low and high outliers)."""
    conn.execute(
        _FLAG_OUTLIERS,
        {"provider": provider, "run_id": run_id, "low": bounds.low, "high": bounds.high},
    )


SUSPECT_IN_BATCH = """
    NOT EXISTS (SELECT 1 FROM price_outliers AS p
                WHERE p.run_id = offer_batch.run_id AND p.offer_id = offer_batch.offer_id
                  AND p.pricing = offer_batch.pricing AND p.suspect)
"""
"""A row of `offer_batch` that is no unconfirmed outlier (for the index roll-up); the same
condition holds suspects out of `current_offers` (migration 0033)."""


def quality_runs(
    cur: duckdb.DuckDBPyConnection, provider: str | None, since: datetime | None, limit: int
) -> list[dict[str, Any]]:
    """Runs observed at or after `since` (None: ever), newest first, at most `limit` per
    provider (a new run is judged by its provider's newest)."""
    return dict_rows(
        cur,
        """
        SELECT * EXCLUDE (n) FROM (
            SELECT *, row_number() OVER (PARTITION BY provider ORDER BY observed_at DESC) AS n
            FROM run_quality
            WHERE (?::TIMESTAMPTZ IS NULL OR observed_at >= ?) AND (? IS NULL OR provider = ?)
        ) WHERE n <= ? ORDER BY provider, observed_at DESC
        """,
        [since, since, provider, provider, limit],
    )


def latest_quality(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Each provider's newest run quality."""
    return quality_runs(cur, None, None, 1)


def _of_runs(
    cur: duckdb.DuckDBPyConnection, columns: str, view: str, order_by: str, run_ids: list[str]
) -> list[dict[str, Any]]:
    """`columns` of one of the run quality views (`view`, a name of ours) for `run_ids`."""
    return dict_rows(
        cur,
        f"SELECT {columns} FROM {view} WHERE list_contains(?, run_id) ORDER BY {order_by}",
        [run_ids],
    )


def unknown_gpus_of_runs(
    cur: duckdb.DuckDBPyConnection, run_ids: list[str]
) -> list[dict[str, Any]]:
    """Per run's provider: each unknown spelling, its offers and an example offer's id."""
    columns = "provider, gpu_raw, offer_count, example AS example_offer_id"
    return _of_runs(
        cur, columns, "run_unknown_gpus", "provider, offer_count DESC, gpu_raw", run_ids
    )


def reject_reasons_of_runs(
    cur: duckdb.DuckDBPyConnection, run_ids: list[str]
) -> list[dict[str, Any]]:
    columns = "provider, reason, records"
    return _of_runs(cur, columns, "run_reject_reasons", "provider, records DESC, reason", run_ids)


def outliers_of_runs(cur: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    columns = "* EXCLUDE (observed_at)"
    return _of_runs(cur, columns, "price_outliers", "provider, side, price_per_gpu_hour", run_ids)
