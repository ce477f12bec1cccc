"""Which offers, in SQL: the resolved filter scope (`OfferFilters`) and the one function that
turns it into conditions (`scope_conditions`), used by current offers, `as_of`, exports and the
history rebuilt from raw observations alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import duckdb

__all__ = [
    "NEWEST_SNAPSHOT",
    "OfferFilters",
    "SortKey",
    "latest_offers",
    "offers_sql",
    "scope_conditions",
]

SortKey = Literal["price_per_gpu_hour", "price_per_hour"]


@dataclass(frozen=True, slots=True)
class OfferFilters:
    """Filters over offers, already resolved: `gpus` is a set of canonical ids, names checked.

    The pipeline's `OfferScope` is what users give; this is what SQL (and the in-memory copy of
    the current offers) evaluates. None or empty means "any".
    """

    gpus: frozenset[str] | None = None
    providers: frozenset[str] | None = None
    pricing: str | None = None
    region: str | None = None
    form_factor: str | None = None
    max_price_per_gpu_hour: float | None = None
    min_gpu_count: int | None = None
    include_unavailable: bool = False
    countries: frozenset[str] | None = None
    continent: str | None = None
    jurisdiction: Literal["eea", "eu"] | None = None
    """Offers whose known country is in it (an unknown country never matches)."""
    sort: SortKey = "price_per_gpu_hour"
    limit: int | None = None
    as_of: datetime | None = None
    """None: the current snapshots; else each provider's last good snapshot at or before it."""


def scope_conditions(f: OfferFilters, params: list[Any]) -> list[str]:
    """SQL conditions for every scope filter of `f`, on any relation with the offer columns."""
    conditions: list[str] = []

    def add(condition: str, value: Any) -> None:
        conditions.append(condition)
        params.append(value)

    if f.gpus is not None:
        add("gpu IN (SELECT unnest(?))", sorted(f.gpus))
    if f.providers is not None:
        add("provider IN (SELECT unnest(?))", sorted(f.providers))
    if f.pricing is not None:
        add("pricing = ?", f.pricing)
    if f.form_factor is not None:
        add("form_factor = ?", f.form_factor)
    if f.region is not None:
        add("contains(lower(region), lower(?))", f.region)
    if f.max_price_per_gpu_hour is not None:
        add("price_per_gpu_hour <= ?", f.max_price_per_gpu_hour)
    if f.min_gpu_count is not None:
        add("gpu_count >= ?", f.min_gpu_count)
    if not f.include_unavailable:
        conditions.append("available")
    if f.countries:
        add("country IN (SELECT unnest(?))", sorted(f.countries))
    if f.continent:
        add("continent = ?", f.continent)
    if f.jurisdiction is not None:
        conditions.append(f"{f.jurisdiction} IS TRUE")  # a column: eea or eu
    return conditions


NEWEST_SNAPSHOT = "{'observed': observed_at, 'finished': finished_at}"
"""The order of a provider's good runs: newest observation first, then last finished."""

_SNAPSHOTS_AS_OF = f"""
    SELECT arg_max(run_id, {NEWEST_SNAPSHOT}) FROM collection_runs
    WHERE status = 'ok' AND observed_at <= ? GROUP BY provider
"""

_ORDER = {
    "price_per_gpu_hour": "price_per_gpu_hour, price_per_hour",
    "price_per_hour": "price_per_hour, price_per_gpu_hour",
}


def latest_offers(conn: duckdb.DuckDBPyConnection, filters: OfferFilters) -> list[dict[str, Any]]:
    """Offers of each provider's latest good snapshot (or the one as of `filters.as_of`)."""
    snapshots = None
    if filters.as_of is not None:
        snapshots = conn.execute(
            f"""
            SELECT arg_max(run_id, {NEWEST_SNAPSHOT}), arg_max(observed_at, {NEWEST_SNAPSHOT})
            FROM collection_runs WHERE status = 'ok' AND observed_at <= ? GROUP BY provider
            """,
            [filters.as_of],
        ).fetchall()
    sql, params = offers_sql(filters, snapshots)
    cursor = conn.execute(sql, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def offers_sql(
    filters: OfferFilters, snapshots: list[tuple[str, datetime]] | None = None
) -> tuple[str, list[Any]]:
    """The query behind `latest_offers`, for exports that stream it to a file.

    With `as_of`, `snapshots` (each provider's snapshot run then and its observed_at, as
    `latest_offers` finds them) bound `observed_at` by constants, so that DuckDB reads only the
    row groups of those snapshots instead of every observation up to `as_of`.
    """
    where = ["TRUE"]
    params: list[Any] = []
    source = "current_offers"
    if filters.as_of is not None and snapshots is None:
        source = "offer_observations"
        where = [f"run_id IN ({_SNAPSHOTS_AS_OF})", "observed_at <= ?"]
        params = [filters.as_of, filters.as_of]
    elif filters.as_of is not None and snapshots is not None:
        source = "offer_observations"
        times = [observed_at for _, observed_at in snapshots]
        where = ["run_id IN (SELECT unnest(?))", "observed_at BETWEEN ? AND ?"]
        params = [[run_id for run_id, _ in snapshots], min(times, default=filters.as_of),
                  min(max(times, default=filters.as_of), filters.as_of)]  # fmt: skip
    where += scope_conditions(filters, params)
    sql = (
        f"SELECT * FROM {source} WHERE "
        + " AND ".join(where)
        + f" ORDER BY {_ORDER[filters.sort]}, provider, offer_id, pricing"
    )
    if filters.limit is not None:
        sql += " LIMIT ?"
        params.append(filters.limit)
    return sql, params
