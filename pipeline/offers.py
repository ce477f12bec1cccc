"""Current offers, as the CLI and the API ask for them: names validated, then one query."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pipeline.catalog import Catalog, GpuSpec, Resolution, get_catalog
from pipeline.collect import provider_module
from pipeline.freshness import cached_status, provider_status
from pipeline.location import get_locator
from scrapers.models import FormFactor, Pricing
from warehouse import OfferFilters, Warehouse
from warehouse import queries as q
from warehouse.current import CurrentOffers

__all__ = [
    "OfferQuery",
    "answered_from_memory",
    "current_offers",
    "gpu_specs",
    "provider_runs",
    "resolve_gpu",
    "serve_from_memory",
    "unknown_gpus",
]

SortKey = Literal["price_per_gpu_hour", "price_per_hour"]


@dataclass(frozen=True, slots=True)
class OfferQuery:
    gpu: str | None = None
    providers: Sequence[str] = ()
    pricing: Pricing | None = None
    region: str | None = None
    form_factor: FormFactor | None = None
    max_price_per_gpu_hour: float | None = None
    include_unavailable: bool = False
    sort: SortKey = "price_per_gpu_hour"
    limit: int | None = None
    as_of: datetime | None = None
    countries: Sequence[str] = ()
    continent: str | None = None
    jurisdiction: str | None = None


def _filters(query: OfferQuery, catalog: Catalog) -> OfferFilters:
    for name in query.providers:
        provider_module(name)
    place = get_locator().parse_filter(list(query.countries), query.continent, query.jurisdiction)
    return OfferFilters(
        gpus=catalog.ids_for_query(query.gpu) if query.gpu else None,
        providers=frozenset(query.providers) or None,
        pricing=str(query.pricing) if query.pricing else None,
        region=query.region or None,
        form_factor=str(query.form_factor) if query.form_factor else None,
        max_price_per_gpu_hour=query.max_price_per_gpu_hour,
        include_unavailable=query.include_unavailable,
        sort=query.sort,
        limit=query.limit,
        as_of=query.as_of,
        countries=place.countries,
        continent=place.continent,
        jurisdiction=place.jurisdiction,
    )


def offer_filters(query: OfferQuery, catalog: Catalog | None = None) -> OfferFilters:
    """Validated warehouse filters for `query` (unknown GPU or provider raise)."""
    return _filters(query, catalog or get_catalog())


def current_offers(
    warehouse: Warehouse, query: OfferQuery, catalog: Catalog | None = None
) -> list[dict[str, Any]]:
    """Offers of each provider's latest good snapshot (or as of `query.as_of`), cheapest first.

    From the in-memory copy when the warehouse is `serve_from_memory` and the copy answers the
    filters; else one query.
    """
    filters = _filters(query, catalog or get_catalog())
    if warehouse in _served and CurrentOffers.answers(filters):
        return _in_memory(warehouse).rows(filters)
    with warehouse.cursor() as cur:
        return q.latest_offers(cur, filters)


_served: weakref.WeakKeyDictionary[Warehouse, CurrentOffers | None] = weakref.WeakKeyDictionary()
_reload_lock = threading.Lock()


def serve_from_memory(warehouse: Warehouse) -> None:
    """Answer `current_offers` on `warehouse` from a copy kept in memory (a serving process).

    The copy is read again when a provider's snapshot changes (`provider_status`: at once for a
    run this process wrote, within `STATUS_TTL_S` for one another process wrote).
    """
    _served.setdefault(warehouse, None)


def _version(status: list[dict[str, Any]]) -> tuple[tuple[str, str | None], ...]:
    return tuple((row["provider"], row["snapshot_run_id"]) for row in status)


def answered_from_memory(warehouse: Warehouse, query: OfferQuery) -> Hashable | None:
    """The version of the in-memory copy `current_offers(warehouse, query)` would answer from
    right now, reading nothing from the database; None when it would read.

    Equal versions mean equal current offers: the version names each provider's snapshot.
    """
    copy = _served.get(warehouse)
    if copy is None or query.as_of is not None or query.region:
        return None
    status = cached_status(warehouse)
    if status is None or copy.version != _version(status):
        return None
    return copy.version  # type: ignore[no-any-return]


def _in_memory(warehouse: Warehouse) -> CurrentOffers:
    version = _version(provider_status(warehouse))
    copy = _served.get(warehouse)
    if copy is not None and copy.version == version:
        return copy
    with _reload_lock:
        copy = _served.get(warehouse)
        if copy is None or copy.version != version:
            with warehouse.cursor() as cur:
                copy = CurrentOffers.load(cur, version)
            _served[warehouse] = copy
    return copy


def unknown_gpus(warehouse: Warehouse) -> list[dict[str, Any]]:
    with warehouse.cursor() as cur:
        return q.unknown_gpus(cur)


def provider_runs(warehouse: Warehouse) -> list[dict[str, Any]]:
    with warehouse.cursor() as cur:
        return q.latest_runs(cur)


def gpu_specs(catalog: Catalog | None = None) -> list[GpuSpec]:
    return (catalog or get_catalog()).specs()


def resolve_gpu(
    name: str, catalog: Catalog | None = None, *, vram_gb: float | None = None
) -> tuple[Resolution, frozenset[str]]:
    """How a provider spelling (with the VRAM it reports) resolves, and which ids the same text
    means as a `gpu=` filter."""
    cat = catalog or get_catalog()
    return cat.resolve(name, vram_gb), cat.ids_for_query(name)


def quality_report(warehouse: Warehouse, provider: str | None, limit: int) -> dict[str, Any]:
    """Quarantined records (newest first) and how many are in each latest snapshot."""
    if provider is not None:
        provider_module(provider)
    with warehouse.cursor() as cur:
        records = q.quarantined(cur, provider, limit)
        latest = q.quarantine_counts(cur)
    return {"latest": latest, "records": records, "count": len(records)}
