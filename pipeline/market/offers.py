"""Offer questions (`OfferQuery`) and the copy of offers that answers them.

Every offer question, current or as of a time, is answered by one engine: an in-memory copy of
the offers (`warehouse.current.CurrentOffers`), read by `read_copy`, the one place that decides
which snapshots a question is asked of. A serving process keeps its copies
(`pipeline.market.serving.OfferServer`); a question asked once reads one (`current_offers`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from pipeline.base import provider_module
from pipeline.catalog import Catalog, GpuSpec, Resolution, get_catalog
from pipeline.market.scope import OfferScope, resolve
from pipeline.timeparse import UtcDateTime
from warehouse import OfferFilters, Warehouse
from warehouse import history as h
from warehouse import queries as q
from warehouse.current import DERIVED_BYTES_KEPT, CurrentOffers
from warehouse.offers import SORT_FIELDS, SortKey, sort_columns

__all__ = [
    "MAX_OFFERS_LIMIT",
    "OfferQuery",
    "current_offers",
    "snapshots_as_of",
    "read_copy",
    "gpu_specs",
    "provider_runs",
    "resolve_gpu",
    "unknown_gpus",
]


MAX_OFFERS_LIMIT = 1_000_000
"""Highest `limit` a question may give (an export of every current offer is ~50,000 rows): a
bound the database's 64-bit LIMIT always takes."""


class OfferQuery(OfferScope):
    """A question about offers: which (the scope), in what order, how many, as of when."""

    sort: SortKey = Field(
        "price_per_gpu_hour",
        max_length=64,
        description=f"Order by one of {', '.join(SORT_FIELDS)}, ascending; -field for "
        "descending (e.g. -reliability). Unknown values last, ties cheapest per GPU-hour first",
        examples=["price_per_gpu_hour", "-reliability", "price_per_pflop_hour"],
    )
    limit: int | None = Field(None, ge=1, le=MAX_OFFERS_LIMIT, description="Most offers to return")
    as_of: UtcDateTime | None = Field(
        None, description="ISO 8601 time: each provider's last snapshot at or before it"
    )

    @field_validator("sort")
    @classmethod
    def _known_sort(cls, value: str) -> str:
        sort_columns(value)  # raises ValueError naming the fields
        return value

    def filters(self, catalog: Catalog | None = None) -> OfferFilters:
        """Validated warehouse filters (unknown GPU, provider or place raise)."""
        return resolve(self, catalog, sort=self.sort, limit=self.limit, as_of=self.as_of)


def read_copy(
    warehouse: Warehouse,
    filters: OfferFilters,
    snapshots: list[dict[str, Any]] | None = None,
    derived_bytes: int = DERIVED_BYTES_KEPT,
) -> CurrentOffers:
    """The copy that answers `filters`: the snapshots in force, or with `as_of` each provider's
    last good snapshot then (`snapshots`, when the caller has found them: `snapshots_as_of`).
    The only read an offer question makes; the rest is `CurrentOffers.select`."""
    with warehouse.cursor() as cur:
        if filters.as_of is None:
            return CurrentOffers.load(cur, None, filters.gpu_figures, derived_bytes=derived_bytes)
        if snapshots is None:
            snapshots = h.snapshot_times(cur, filters.as_of)
        runs = [(snap["run_id"], snap["observed_at"]) for snap in snapshots]
        key = tuple(sorted(run_id for run_id, _ in runs))
        past = (runs, filters.as_of)
        return CurrentOffers.load(cur, key, filters.gpu_figures, past, derived_bytes)


def snapshots_as_of(warehouse: Warehouse, as_of: datetime) -> list[dict[str, Any]]:
    """Each provider's last good snapshot at or before `as_of`: run, observed time, size."""
    with warehouse.cursor() as cur:
        return h.snapshot_times(cur, as_of)


def current_offers(
    warehouse: Warehouse, query: OfferQuery, catalog: Catalog | None = None
) -> list[dict[str, Any]]:
    """The offers a question asked once selects (now, or as of `query.as_of`), in its order: a
    copy read for it (a serving process keeps its copies: `pipeline.market.serving`)."""
    filters = query.filters(catalog)
    return read_copy(warehouse, filters).rows(filters)


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
