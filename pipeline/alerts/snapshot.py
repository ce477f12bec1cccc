"""Current offers read once per evaluation: each rule's question is a selection in memory.

Evaluating rules one query each took ~18 ms a rule (10,000 rules: minutes after every
collection). `OfferSnapshot` reads every current offer once, into the same in-memory copy a
serving process answers `/offers` from (`warehouse.current.CurrentOffers`), and answers each
price, availability or workload rule from it, the `region` filter (which that copy leaves to
SQL) applied here as the SQL applies it: a case-insensitive part of the region text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipeline.catalog import Catalog
from pipeline.market.offers import OfferQuery, current_offers
from warehouse import Warehouse
from warehouse.current import CurrentOffers

__all__ = ["OfferSnapshot"]


class OfferSnapshot:
    """`current_offers(warehouse, query)` for many queries, the offers read at the first one."""

    def __init__(self, warehouse: Warehouse, catalog: Catalog) -> None:
        self._warehouse, self._catalog = warehouse, catalog
        self._copy: CurrentOffers | None = None
        self.reads = 0
        """How many times the offers were read from the warehouse (one per evaluation)."""

    def offers(self, query: OfferQuery) -> list[dict[str, Any]]:
        filters = query.filters(self._catalog)
        if filters.as_of is not None:  # a past snapshot: not what a rule asks
            return current_offers(self._warehouse, query, self._catalog)
        if self._copy is None:
            with self._warehouse.cursor() as cur:
                self._copy = CurrentOffers.load(cur, None, filters.gpu_figures)
            self.reads += 1
        if filters.region is None:
            return self._copy.rows(filters)
        rows = self._copy.rows(replace(filters, region=None, limit=None))
        part = filters.region.lower()
        matched = [row for row in rows if part in (row.get("region") or "").lower()]
        return matched if filters.limit is None else matched[: filters.limit]
