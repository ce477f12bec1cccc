"""The DuckDB warehouse: opening, migrations, transactions and driver-error translation."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import duckdb

from warehouse.errors import DatabaseLockedError, MigrationError, WarehouseError

__all__ = ["Warehouse", "translate_error"]

logger = logging.getLogger(__name__)

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_SCHEMA_VERSION_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version "
    "(version INTEGER NOT NULL, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)


def translate_error(exc: duckdb.Error, path: str) -> WarehouseError:
    """One readable error for a driver error; a lock held elsewhere: `DatabaseLockedError`."""
    message = str(exc)
    if "lock" in message.lower() and ("Conflicting" in message or "Could not set lock" in message):
        pid = re.search(r"PID (\d+)", message)
        holder = f" (PID {pid.group(1)})" if pid else ""
        return DatabaseLockedError(
            f"Database {path} is in use by another process{holder}: stop it (e.g. a running "
            f"`gpuprices serve`) or point --db / GPUPRICES_DB at another file"
        )
    first_line = message.splitlines()[0] if message else type(exc).__name__
    return WarehouseError(f"Database {path}: {first_line}")


def _migrations() -> list[tuple[int, str, str]]:
    found = []
    for entry in resources.files("warehouse.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class Warehouse:
    """One DuckDB database. Threads get their own cursor; writes go through `transaction()`."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, path: str) -> None:
        self._conn = conn
        self.path = path
        self._write_lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path, *, read_only: bool = False) -> Warehouse:
        """Open (creating if needed) and migrate the database at `path` (':memory:' allowed)."""
        target = str(path)
        if target != ":memory:" and not read_only:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = duckdb.connect(target, read_only=read_only)
            conn.execute("SET TimeZone = 'UTC'")
        except duckdb.Error as exc:
            raise translate_error(exc, target) from exc
        warehouse = cls(conn, target)
        if not read_only:
            warehouse.migrate()
        return warehouse

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of its own for one unit of read work (safe across threads)."""
        cur = self._conn.cursor()
        try:
            yield cur
        except duckdb.Error as exc:
            raise translate_error(exc, self.path) from exc
        finally:
            cur.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Commit everything done inside, or roll it all back and re-raise."""
        with self._write_lock, self.cursor() as cur:
            cur.begin()
            try:
                yield cur
            except BaseException:
                cur.rollback()
                raise
            cur.commit()

    def schema_version(self) -> int:
        with self.cursor() as cur:
            cur.execute(_SCHEMA_VERSION_DDL)
            row = cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    def migrate(self) -> list[str]:
        """Apply, in order, every numbered migration not applied yet, each in its own transaction.

        Tracked by version number, so a migration merged later with a lower number than one
        already applied still runs.
        """
        applied: list[str] = []
        self.schema_version()  # creates the schema_version table on a new database
        with self.cursor() as cur:
            done = {
                int(row[0]) for row in cur.execute("SELECT version FROM schema_version").fetchall()
            }
        for version, name, sql in _migrations():
            if version in done:
                continue
            try:
                with self.transaction() as cur:
                    cur.execute(sql)
                    cur.execute(
                        "INSERT INTO schema_version VALUES (?, ?, ?)",
                        [version, name, datetime.now(UTC)],
                    )
            except (duckdb.Error, WarehouseError) as exc:
                raise MigrationError(f"Migration {name} failed: {exc}") from exc
            logger.info("applied migration %s", name)
            applied.append(name)
        return applied
