"""Exchange rates from a rate source (the ECB): stored in bulk, read as of a date."""

from __future__ import annotations

from datetime import date

import duckdb
import pyarrow as pa

__all__ = ["RATE_SCHEMA", "insert_rates", "latest_rate_dates", "rate_on_or_before"]

RATE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("base", pa.string()),
        ("currency", pa.string()),
        ("rate_date", pa.date32()),
        ("rate", pa.float64()),
        ("run_id", pa.string()),
        ("observed_at", pa.timestamp("us", tz="UTC")),
    ]
)
"""The columns of `fx_rates` (migration 0014), as the batch handed to `insert_rates` has them."""


def insert_rates(conn: duckdb.DuckDBPyConnection, rates: pa.Table) -> None:
    """Store one run's rates in bulk (`RATE_SCHEMA`); call inside `Warehouse.transaction()`."""
    conn.register("rate_batch", rates.cast(RATE_SCHEMA))
    try:
        conn.execute("INSERT INTO fx_rates BY NAME SELECT * FROM rate_batch")
    finally:
        conn.unregister("rate_batch")


def rate_on_or_before(
    conn: duckdb.DuckDBPyConnection, base: str, currency: str, day: date
) -> tuple[date, float] | None:
    """The newest rate of `currency` per `base` dated `day` or earlier, with its date."""
    row = conn.execute(
        """
        SELECT rate_date, arg_max(rate, observed_at) FROM fx_rates
        WHERE base = ? AND currency = ? AND rate_date <= ?
        GROUP BY rate_date ORDER BY rate_date DESC LIMIT 1
        """,
        [base, currency, day],
    ).fetchone()
    return None if row is None else (row[0], float(row[1]))


def latest_rate_dates(conn: duckdb.DuckDBPyConnection) -> dict[str, date]:
    """Per rate source, the date of the newest rate it has stored."""
    rows = conn.execute("SELECT source, max(rate_date) FROM fx_rates GROUP BY source").fetchall()
    return {source: day for source, day in rows}
