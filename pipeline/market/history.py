"""Price history, offers "as of" a past time, exports and retention, for the CLI and the API."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import orjson
import pyarrow as pa
from pydantic import Field

from pipeline.errors import PipelineError
from pipeline.market.scope import PLACE_SCOPE, OfferScope, resolve
from pipeline.timeparse import UtcDateTime
from warehouse import Warehouse
from warehouse import history as h
from warehouse.history_json import price_history_json as history_json

__all__ = [
    "HistoryQuery",
    "check_as_of",
    "cheapest_available_at",
    "export_history",
    "export_offers",
    "export_partitioned",
    "export_sql",
    "price_history",
    "price_history_json",
    "prune",
    "time_range",
]

Interval = Literal["1h", "6h", "1d", "1w"]
DEFAULT_SPAN = {
    "1h": timedelta(days=7),
    "6h": timedelta(days=30),
    "1d": timedelta(days=90),
    "1w": timedelta(days=365),
}
"""How far back history (and the index) goes without `since`: about a screen of points."""
INCLUDE_NOW = timedelta(seconds=1)
"""`until` is exclusive: without one, a question ends just after now."""
ExportFormat = Literal["csv", "parquet"]
SERIES_KEY = ("gpu", "form_factor", "provider", "pricing")
"""What one history series is of: SXM and PCIe of one GPU are separate series."""


class HistoryQuery(OfferScope):
    """How prices moved: one GPU (id, family or spelling) over buckets, for offers in scope."""

    gpu: str = Field(  # required here
        min_length=1,
        max_length=200,
        description="Canonical id (A100-80GB), family (A100) or any provider spelling",
        examples=["A100-80GB"],
    )
    interval: Interval = Field("1h", description="Bucket size of the history")
    since: UtcDateTime | None = Field(None, description="Start (ISO 8601 time or date, inclusive)")
    until: UtcDateTime | None = Field(None, description="End (ISO 8601 time or date, exclusive)")


HISTORY_SCOPE = PLACE_SCOPE | {"form_factor"}
"""History is kept per snapshot summary (GPU, form factor, provider, pricing) and raw
observations for the retention window; prices and node details are not filters of history."""


def time_range(
    since: datetime | None, until: datetime | None, interval: str, now: datetime
) -> tuple[datetime, datetime]:
    """`[since, until)` of a question in `interval` buckets, each bound's default filled in."""
    until = until or now + INCLUDE_NOW
    since = since or until - DEFAULT_SPAN[interval]
    if since >= until:
        raise PipelineError(
            f"since ({since.isoformat()}) must be before until ({until.isoformat()})"
        )
    return since, until


def _filters(query: HistoryQuery, now: datetime) -> h.HistoryFilters:
    query.check_honoured(HISTORY_SCOPE, "history")
    since, until = time_range(query.since, query.until, query.interval, now)
    scope = resolve(query, include_unavailable=True)  # statistics cover every listed offer
    return h.HistoryFilters(scope=scope, interval=query.interval, since=since, until=until)


def price_history(warehouse: Warehouse, query: HistoryQuery, now: datetime) -> dict[str, Any]:
    """`{"gpu", "interval", "since", "until", "series": [{gpu, form_factor, provider, pricing,
    points}]}`: SXM and PCIe of one GPU are separate series."""
    filters = _filters(query, now)
    with warehouse.cursor() as cur:
        rows = h.price_history(cur, filters)
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(tuple(row.pop(name) for name in SERIES_KEY), []).append(row)
    return {
        "gpu": query.gpu,
        "gpus": sorted(filters.scope.gpus or ()),
        "interval": query.interval,
        "since": filters.since,
        "until": filters.until,
        "series": [
            {**dict(zip(SERIES_KEY, key, strict=True)), "points": points}
            for key, points in series.items()
        ],
    }


def price_history_json(warehouse: Warehouse, query: HistoryQuery, now: datetime) -> bytes:
    """The body of `GET /prices/history`, same fields as `price_history`, as JSON bytes.

    The points come serialised from DuckDB, so a year of hourly buckets never becomes tens of
    thousands of Python objects.
    """
    filters = _filters(query, now)
    with warehouse.cursor() as cur:
        series = history_json(cur, filters)
    body = {
        "gpu": query.gpu,
        "gpus": sorted(filters.scope.gpus or ()),
        "interval": query.interval,
        "since": filters.since.astimezone(UTC),
        "until": filters.until.astimezone(UTC),
        "series": [
            {**dict(zip(SERIES_KEY, key, strict=True)), "points": orjson.Fragment(points)}
            for *key, points in series
        ],
    }
    return orjson.dumps(body, option=orjson.OPT_UTC_Z)


def cheapest_available_at(
    warehouse: Warehouse, at: datetime, lookback: timedelta, providers: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """`{gpu, form_factor, pricing, price_per_gpu_hour}`: the cheapest available offer of each
    GPU as the providers' last snapshots at `at` (none older than `lookback`) listed it."""
    with warehouse.cursor() as cur:
        return h.cheapest_available_at(cur, at, lookback, frozenset(providers) or None)


def check_as_of(as_of: datetime, now: datetime, retention: timedelta) -> None:
    """Raw snapshots older than the retention window are pruned: say so instead of answering []."""
    if as_of > now:
        raise PipelineError(f"as_of {as_of.isoformat()} is in the future")
    if as_of < now - retention:
        raise PipelineError(
            f"as_of {as_of.isoformat()} is older than the retention window "
            f"({retention.days} days, GPUPRICES_RETENTION): raw snapshots that old are pruned; "
            "use /prices/history for older prices"
        )


def export_sql(warehouse: Warehouse, sql: str, params: list[Any], fmt: ExportFormat) -> bytes:
    """The rows of a warehouse query as CSV or Parquet bytes (the export endpoints' body)."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / f"export.{fmt}"
        with warehouse.cursor() as cur:
            h.export_query(cur, sql, params, target, fmt)
        return target.read_bytes()


def export_offers(warehouse: Warehouse, offers: pa.Table, fmt: ExportFormat) -> bytes:
    """An answer's offers (`OffersAnswer.table`: the rows `/offers` lists, in its order) as CSV
    or Parquet bytes, written as the other exports are."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / f"export.{fmt}"
        with warehouse.cursor() as cur:
            h.export_table(cur, offers, target, fmt)
        return target.read_bytes()


def export_history(
    warehouse: Warehouse, query: HistoryQuery, now: datetime, fmt: ExportFormat
) -> bytes:
    """The history points, one row per (gpu, provider, pricing, bucket)."""
    sql, params = h.history_sql(_filters(query, now))
    return export_sql(warehouse, sql, params, fmt)


def export_partitioned(warehouse: Warehouse, since: datetime, until: datetime, target: Path) -> int:
    """Raw observations as Hive-partitioned Parquet under `target`; returns the row count."""
    if since >= until:
        raise PipelineError("--since must be before --until")
    target.mkdir(parents=True, exist_ok=True)
    with warehouse.cursor() as cur:
        return h.copy_partitioned_parquet(cur, since, until, target)


def prune(warehouse: Warehouse, now: datetime, retention: timedelta) -> dict[str, int]:
    """Drop raw observations older than `retention` (their summaries are kept)."""
    with warehouse.transaction() as conn:
        deleted = h.prune_before(conn, now - retention)
    deleted.update(warehouse.checkpoint(now))  # the file stops growing; a lake's bucket too
    return deleted
