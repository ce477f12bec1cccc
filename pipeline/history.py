"""Price history, offers "as of" a past time, exports and retention, for the CLI and the API."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import orjson

from pipeline.catalog import get_catalog
from pipeline.collect import provider_module
from pipeline.errors import PipelineError
from pipeline.location import get_locator
from pipeline.offers import OfferQuery, offer_filters
from warehouse import Warehouse
from warehouse import history as h
from warehouse.queries import offers_sql

__all__ = [
    "HistoryQuery",
    "check_as_of",
    "export_history",
    "export_offers",
    "export_partitioned",
    "price_history",
    "price_history_json",
    "prune",
    "snapshots_as_of",
]

Interval = Literal["1h", "6h", "1d", "1w"]
INCLUDE_NOW = timedelta(seconds=1)
ExportFormat = Literal["csv", "parquet"]


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    gpu: str
    interval: Interval = "1h"
    providers: Sequence[str] = ()
    pricing: str | None = None
    region: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    countries: Sequence[str] = ()
    continent: str | None = None
    jurisdiction: str | None = None


def _filters(query: HistoryQuery, now: datetime) -> h.HistoryFilters:
    if query.interval not in h.BUCKETS:
        raise PipelineError(f"interval must be one of {', '.join(h.BUCKETS)}")
    for name in query.providers:
        provider_module(name)
    until = query.until or now + INCLUDE_NOW  # `until` is exclusive: default to just after now
    since = query.since or h.default_since(query.interval, until)
    if since >= until:
        raise PipelineError(
            f"since ({since.isoformat()}) must be before until ({until.isoformat()})"
        )
    place = get_locator().parse_filter(list(query.countries), query.continent, query.jurisdiction)
    return h.HistoryFilters(
        gpus=get_catalog().ids_for_query(query.gpu),
        interval=query.interval,
        since=since,
        until=until,
        providers=frozenset(query.providers) or None,
        pricing=query.pricing,
        region=query.region,
        countries=place.countries,
        continent=place.continent,
        jurisdiction=place.jurisdiction,
    )


def price_history(warehouse: Warehouse, query: HistoryQuery, now: datetime) -> dict[str, Any]:
    """`{"gpu", "interval", "since", "until", "series": [{gpu, provider, pricing, points}]}`."""
    filters = _filters(query, now)
    with warehouse.cursor() as cur:
        rows = h.price_history(cur, filters)
    series: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        key = (row.pop("gpu"), row.pop("provider"), row.pop("pricing"))
        series.setdefault(key, []).append(row)
    return {
        "gpu": query.gpu,
        "gpus": sorted(filters.gpus),
        "interval": query.interval,
        "since": filters.since,
        "until": filters.until,
        "series": [
            {"gpu": gpu, "provider": provider, "pricing": pricing, "points": points}
            for (gpu, provider, pricing), points in series.items()
        ],
    }


def price_history_json(warehouse: Warehouse, query: HistoryQuery, now: datetime) -> bytes:
    """The body of `GET /prices/history`, same fields as `price_history`, as JSON bytes.

    The points come serialised from DuckDB, so a year of hourly buckets never becomes tens of
    thousands of Python objects.
    """
    filters = _filters(query, now)
    with warehouse.cursor() as cur:
        series = h.price_history_json(cur, filters)
    body = {
        "gpu": query.gpu,
        "gpus": sorted(filters.gpus),
        "interval": query.interval,
        "since": filters.since.astimezone(UTC),
        "until": filters.until.astimezone(UTC),
        "series": [
            {
                "gpu": gpu,
                "provider": provider,
                "pricing": pricing,
                "points": orjson.Fragment(points),
            }
            for gpu, provider, pricing, points in series
        ],
    }
    return orjson.dumps(body, option=orjson.OPT_UTC_Z)


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


def snapshots_as_of(warehouse: Warehouse, as_of: datetime) -> list[dict[str, Any]]:
    with warehouse.cursor() as cur:
        return h.snapshot_times(cur, as_of)


def _export(warehouse: Warehouse, sql: str, params: list[Any], fmt: ExportFormat) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / f"export.{fmt}"
        with warehouse.cursor() as cur:
            h.export_query(cur, sql, params, target, fmt)
        return target.read_bytes()


def export_offers(warehouse: Warehouse, query: OfferQuery, fmt: ExportFormat) -> bytes:
    """The offers `/offers` would list, as CSV or Parquet bytes."""
    sql, params = offers_sql(offer_filters(query))
    return _export(warehouse, sql, params, fmt)


def export_history(
    warehouse: Warehouse, query: HistoryQuery, now: datetime, fmt: ExportFormat
) -> bytes:
    """The history points, one row per (gpu, provider, pricing, bucket)."""
    sql, params = h.history_sql(_filters(query, now))
    return _export(warehouse, sql, params, fmt)


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
    deleted["orphaned_files"] = warehouse.checkpoint(now)  # the file stops growing
    return deleted
