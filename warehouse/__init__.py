"""DuckDB storage (a file or a DuckLake): numbered migrations, one transaction per provider
run, named queries."""

from __future__ import annotations

from warehouse.db import Warehouse
from warehouse.errors import DatabaseLockedError, MissingExtraError, WarehouseError
from warehouse.offers import OfferFilters
from warehouse.queries import RunRow
from warehouse.target import LakeTarget, parse_target

__all__ = [
    "DatabaseLockedError",
    "LakeTarget",
    "MissingExtraError",
    "OfferFilters",
    "RunRow",
    "Warehouse",
    "WarehouseError",
    "parse_target",
]
