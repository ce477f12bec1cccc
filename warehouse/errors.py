"""Errors raised by the warehouse.

WarehouseError              every storage failure
├── DatabaseLockedError     another process holds the DuckDB file
├── MigrationError          a migration failed; the database is left at the previous version
└── MissingExtraError       a DuckLake warehouse without the `gpuprices[lake]` packages
"""

from __future__ import annotations

__all__ = ["DatabaseLockedError", "MigrationError", "MissingExtraError", "WarehouseError"]


class WarehouseError(Exception):
    """The warehouse could not do what was asked; the message says what to fix."""


class DatabaseLockedError(WarehouseError):
    """The database file is held by another process (DuckDB allows one writer)."""


class MigrationError(WarehouseError):
    """A schema migration failed."""


class MissingExtraError(WarehouseError):
    """An optional package the chosen backend needs is not installed; the message names it."""
