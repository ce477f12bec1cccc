"""Copy a whole warehouse (history, runs, alerts, outbox) into another, e.g. a file onto a lake.

Tables stream across as Arrow record batches, one bulk `INSERT ... BY NAME` per table, all in one
transaction of the target: a failed copy leaves the target as it was. The target must be empty
(migrated, no rows) so that a copy is never merged into, nor doubles, existing data.
"""

from __future__ import annotations

import logging

import duckdb

from warehouse.db import Warehouse
from warehouse.errors import WarehouseError

__all__ = ["BATCH_ROWS", "copy_warehouse", "table_counts"]

logger = logging.getLogger(__name__)

BATCH_ROWS = 100_000
"""Rows per Arrow batch while streaming: bounded memory whatever the history's size."""
_NOT_COPIED = frozenset({"schema_version"})  # each side keeps its own migration record


def _tables(cur: duckdb.DuckDBPyConnection) -> list[str]:
    rows = cur.execute(
        """
        SELECT table_name FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name = 'main'
        ORDER BY table_name
        """
    ).fetchall()
    return [str(row[0]) for row in rows if row[0] not in _NOT_COPIED]


def table_counts(warehouse: Warehouse) -> dict[str, int]:
    """Rows per application table."""
    with warehouse.cursor() as cur:
        counts = {}
        for table in _tables(cur):
            row = cur.execute(f'SELECT count(*) FROM "{table}"').fetchone()
            counts[table] = int(row[0]) if row else 0
    return counts


def copy_warehouse(source: Warehouse, target: Warehouse) -> dict[str, int]:
    """Copy every table of `source` into the empty `target`; rows copied per table."""
    if source.schema_version() != target.schema_version():
        raise WarehouseError(
            f"Schema versions differ ({source.schema_version()} vs {target.schema_version()}): "
            "upgrade gpuprices and open both once to migrate them"
        )
    occupied = [name for name, n in table_counts(target).items() if n]
    if occupied:
        raise WarehouseError(
            f"{target.path} already holds data ({', '.join(occupied)}): copy into an empty "
            "warehouse"
        )
    copied: dict[str, int] = {}
    with source.cursor() as src, target.transaction() as dst:
        target_tables = set(_tables(dst))
        for table in _tables(src):
            if table not in target_tables:
                raise WarehouseError(f"{target.path} has no table {table}")
            reader = src.execute(f'SELECT * FROM "{table}"').to_arrow_reader(BATCH_ROWS)
            dst.register("copy_batch", reader)
            try:
                dst.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM copy_batch')
            finally:
                dst.unregister("copy_batch")
            row = dst.execute(f'SELECT count(*) FROM "{table}"').fetchone()
            copied[table] = int(row[0]) if row else 0
            logger.info("copied %s: %d rows", table, copied[table])
    return copied
