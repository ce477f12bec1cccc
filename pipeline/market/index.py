"""The GPU price index, methodology v1, and the explanation of each of its values.

Per canonical GPU and pricing (never mixed; per form factor when one is asked for), per UTC
bucket (`1h` or `1d`): each provider contributes the cheapest *available* price per GPU-hour in
its last good snapshot taken inside the bucket; the value is the median of the contributions (the
mean of the two middle ones when their number is even), one provider one vote. A bucket where no
provider contributes has no point: a gap, never a zero. The inputs are the rollups written at
ingest (`warehouse.index`), which keep the contributing offer's id, so every value stays
explainable after raw observations are pruned.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from pipeline.catalog import Catalog, get_catalog
from pipeline.errors import PipelineError
from pipeline.market.history import INCLUDE_NOW, ExportFormat, export_sql, time_range
from pipeline.market.scope import Name, OfferScope, resolve
from pipeline.timeparse import UtcDateTime
from scrapers import PROVIDERS
from scrapers.models import Pricing
from warehouse import Warehouse
from warehouse import index as wi

__all__ = [
    "INDEX_SCOPE",
    "METHODOLOGY",
    "OUTSIDE_INDEX",
    "ExplainQuery",
    "IndexQuery",
    "explain_index",
    "export_index",
    "index_change",
    "index_series",
    "latest_index_values",
    "one_gpu",
]

METHODOLOGY = "v1"
OUTSIDE_INDEX = frozenset(name for name, p in PROVIDERS.items() if not p.in_price_index)
"""Providers methodology v1 leaves out (`IN_PRICE_INDEX = False`: the hyperscalers' list prices
would move its medians); their offers are listed and compared, never in the index."""
NOT_IN_METHODOLOGY = "not in methodology v1"
INDEX_SCOPE = frozenset({"gpu", "pricing", "form_factor"})
"""The index is per GPU, pricing and (optionally) form factor: no place or node filters."""
IndexInterval = Literal["1h", "1d"]

FAILED_RUN = "failed run"
NO_SNAPSHOT = "no snapshot in bucket"
NO_AVAILABLE_OFFER = "no available offer"


class IndexQuery(OfferScope):
    """An index series: one GPU (id, family or spelling) and pricing, in 1 h or 1 d buckets."""

    gpu: Name = Field(  # required here
        description="Canonical id (H100-80GB), family (H100) or any provider spelling",
        examples=["H100-80GB"],
    )
    interval: IndexInterval = Field("1d", description="Bucket size: 1h or 1d (UTC)")
    since: UtcDateTime | None = Field(None, description="Start (ISO 8601, inclusive)")
    until: UtcDateTime | None = Field(None, description="End (ISO 8601, exclusive; default now)")


class ExplainQuery(OfferScope):
    """One value of the index: the bucket holding `t`."""

    gpu: Name = Field(description="One canonical GPU id or spelling")
    interval: IndexInterval = Field("1d", description="Bucket size: 1h or 1d (UTC)")
    t: UtcDateTime = Field(description="Any time inside the bucket (ISO 8601)")


def _pricings(scope: OfferScope) -> list[str]:
    return [str(scope.pricing)] if scope.pricing else [str(Pricing.ON_DEMAND), str(Pricing.SPOT)]


def one_gpu(scope: OfferScope, catalog: Catalog | None = None) -> str:
    """The one canonical id `scope.gpu` names; a family of several is refused with its members."""
    gpus = resolve(scope, catalog).gpus or frozenset()
    if len(gpus) != 1:
        raise PipelineError(
            f"'{scope.gpu}' names several GPUs ({', '.join(sorted(gpus))}): give one of them"
        )
    return next(iter(gpus))


def index_filters(
    query: IndexQuery, now: datetime, catalog: Catalog | None = None
) -> wi.IndexFilters:
    """The warehouse filter of the series the query asks for (each GPU × pricing)."""
    query.check_honoured(INDEX_SCOPE, "the index")
    since, until = time_range(query.since, query.until, query.interval, now)
    return wi.IndexFilters(
        gpus=resolve(query, catalog).gpus or frozenset(),
        pricings=tuple(_pricings(query)),
        interval=query.interval,
        since=since,
        until=until,
        form_factor=str(query.form_factor) if query.form_factor else None,
        excluded_providers=OUTSIDE_INDEX,
    )


def index_series(
    warehouse: Warehouse, query: IndexQuery, now: datetime, catalog: Catalog | None = None
) -> dict[str, Any]:
    """`{"methodology", "interval", "since", "until", "series": [{gpu, pricing, form_factor,
    points: [{t, value, providers}]}]}`: one series per GPU and pricing asked for; a series
    with no contribution has no points."""
    f = index_filters(query, now, catalog)
    with warehouse.cursor() as cur:
        rows = wi.index_points(cur, f)
    points: dict[tuple[str, str], list[dict[str, Any]]] = {
        (gpu, pricing): [] for gpu in sorted(f.gpus) for pricing in f.pricings
    }
    for row in rows:
        points[(row["gpu"], row["pricing"])].append(
            {"t": row["t"], "value": row["value"], "providers": row["providers"]}
        )
    return {
        "methodology": METHODOLOGY,
        "interval": query.interval,
        "since": f.since,
        "until": f.until,
        "series": [
            {"gpu": gpu, "pricing": pricing, "form_factor": f.form_factor, "points": series}
            for (gpu, pricing), series in points.items()
        ],
    }


def explain_index(
    warehouse: Warehouse, query: ExplainQuery, catalog: Catalog | None = None
) -> dict[str, Any]:
    """Each provider's contribution to one bucket (value, offer, snapshot) and each provider
    left out with its reason; the median of the contributions is `value`."""
    query.check_honoured(INDEX_SCOPE, "the index")
    gpu = one_gpu(query, catalog or get_catalog())
    pricing = str(query.pricing or Pricing.ON_DEMAND)
    form_factor = str(query.form_factor) if query.form_factor else None
    t = wi.bucket_start(query.t, query.interval)
    with warehouse.cursor() as cur:
        rows = wi.contributions(
            cur, frozenset({gpu}), pricing, query.interval, t, form_factor, OUTSIDE_INDEX
        )
        end = t + wi.INDEX_INTERVALS[query.interval]
        runs = {r["provider"]: r for r in wi.bucket_runs(cur, t, end)}
        providers = wi.known_providers(cur)
    contributions: dict[str, dict[str, Any]] = {}
    for row in rows:  # cheapest first per provider
        if row["value"] is not None:
            contributions.setdefault(row["provider"], row)
    excluded = []
    for provider in providers:
        if provider in contributions:
            continue
        run = runs.get(provider)
        reason = (
            NOT_IN_METHODOLOGY if provider in OUTSIDE_INDEX
            else NO_SNAPSHOT if run is None
            else FAILED_RUN if not run["good"]
            else NO_AVAILABLE_OFFER
        )  # fmt: skip
        excluded.append(
            {
                "provider": provider,
                "reason": reason,
                "snapshot_at": run["observed_at"] if run else None,
            }
        )
    values = [c["value"] for c in contributions.values()]
    return {
        "methodology": METHODOLOGY,
        "gpu": gpu,
        "pricing": pricing,
        "form_factor": form_factor,
        "interval": query.interval,
        "t": t,
        "value": statistics.median(values) if values else None,
        "providers": len(values),
        "contributions": sorted(contributions.values(), key=lambda c: (c["value"], c["provider"])),
        "excluded": excluded,
    }


def export_index(
    warehouse: Warehouse, query: IndexQuery, now: datetime, fmt: ExportFormat
) -> bytes:
    """The points of `index_series`, one row per (gpu, pricing, bucket), as CSV or Parquet."""
    sql, params = wi.index_sql(index_filters(query, now))
    return export_sql(warehouse, sql, params, fmt)


def index_change(
    warehouse: Warehouse, scope: OfferScope, within: timedelta, now: datetime
) -> dict[str, Any] | None:
    """How the hourly index of one GPU moved: its latest value against the value of the bucket
    `within` before it, in %. None when either bucket is a gap."""
    gpu = one_gpu(scope)
    pricing = str(scope.pricing or Pricing.ON_DEMAND)
    form_factor = str(scope.form_factor) if scope.form_factor else None
    f = wi.IndexFilters(
        frozenset({gpu}), (pricing,), "1h", now - within - timedelta(days=1), now + INCLUDE_NOW,
        form_factor, OUTSIDE_INDEX,
    )  # fmt: skip
    with warehouse.cursor() as cur:
        points = {p["t"]: p["value"] for p in wi.index_points(cur, f)}
    if not points:
        return None
    latest = max(points)
    previous = points.get(latest - within)
    if previous is None or previous <= 0:
        return None
    return {
        "gpu": gpu,
        "pricing": pricing,
        "t": latest,
        "value": points[latest],
        "previous_t": latest - within,
        "previous_value": previous,
        "change_percent": (points[latest] / previous - 1) * 100,
    }


def latest_index_values(warehouse: Warehouse) -> list[dict[str, Any]]:
    """`{gpu, pricing, value, t}`: the latest hourly index value of every GPU and pricing."""
    with warehouse.cursor() as cur:
        return wi.index_latest(cur, "1h", OUTSIDE_INDEX)
