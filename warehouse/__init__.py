"""DuckDB storage: numbered migrations, one transaction per provider run, named queries."""

from __future__ import annotations

from warehouse.db import Warehouse
from warehouse.errors import DatabaseLockedError, MigrationError, WarehouseError
from warehouse.queries import OFFER_SCHEMA, REJECT_SCHEMA, OfferFilters, RunRow

__all__ = [
    "OFFER_SCHEMA",
    "REJECT_SCHEMA",
    "DatabaseLockedError",
    "MigrationError",
    "OfferFilters",
    "RunRow",
    "Warehouse",
    "WarehouseError",
]
