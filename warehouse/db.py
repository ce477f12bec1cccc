"""The DuckDB warehouse: opening, migrations, transactions, driver-error translation, and the
rows of a read as dicts (`dict_rows`, what the named reads return)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from warehouse import lake as _lake
from warehouse import leases as _leases
from warehouse.errors import DatabaseLockedError, MigrationError, WarehouseError
from warehouse.lake_s3 import s3_reason
from warehouse.target import LakeTarget, Target, parse_target, redacted

__all__ = ["Warehouse", "dict_rows", "insert_row", "translate_error"]

logger = logging.getLogger(__name__)

ORPHAN_AGE = timedelta(days=1)
"""Parquet files on a lake that no snapshot lists are deleted once this old (`checkpoint`)."""
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
    reason = s3_reason(message) if isinstance(exc, duckdb.HTTPException) else None
    if reason:
        first_line = f"{first_line}: {reason}"
    return WarehouseError(redacted(f"Database {path}: {first_line}"))


def dict_rows(
    conn: duckdb.DuckDBPyConnection, sql: str, params: Any = None
) -> list[dict[str, Any]]:
    """Each row of `sql` as a dict by column name."""
    cursor = conn.execute(sql, params or [])
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def insert_row(
    conn: duckdb.DuckDBPyConnection, table: str, row: Any, kind: type | None = None
) -> None:
    """`row` (a dataclass) into `table`, each field of `kind` (its own type unless a subclass
    carries more) to the column of its name."""
    names = [f.name for f in fields(kind or type(row))]
    conn.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [getattr(row, name) for name in names],
    )


def _migrations() -> list[tuple[int, str, str]]:
    found = []
    for entry in resources.files("warehouse.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class Warehouse:
    """One DuckDB database (embedded file or DuckLake). Threads get their own cursor; writes go
    through `transaction()`."""

    def __init__(
        self, conn: duckdb.DuckDBPyConnection, path: str, lake: LakeTarget | None = None
    ) -> None:
        self._conn = conn
        self.path = path
        self.lake = lake
        """The lake this warehouse is on; None for an embedded file."""
        self._write_lock = threading.Lock()
        self.generation = 0
        """Transactions committed through this object: a reader's cache of what it read is
        current while this has not moved (writes by other processes need a time bound)."""

    @classmethod
    def open(
        cls,
        path: str | Target,
        *,
        read_only: bool = False,
        data_path: str | Path | None = None,
    ) -> Warehouse:
        """Open (creating if needed) and migrate the warehouse at `path`.

        `path` is a file (':memory:' allowed), a `duckdb://` URL, a `LakeTarget`, or a
        `ducklake:postgres:` URL with its `data_path`.
        """
        target = path if isinstance(path, LakeTarget) else parse_target(path, data_path)
        lake = target if isinstance(target, LakeTarget) else None
        name = str(target)
        if lake is not None:
            if not lake.data_path.startswith(_lake.REMOTE_SCHEMES):
                Path(lake.data_path).mkdir(parents=True, exist_ok=True)
        elif name != ":memory:" and not read_only:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        try:
            if lake is not None:
                conn = _lake.connect_lake(lake)
            else:
                conn = duckdb.connect(name, read_only=read_only)
                conn.execute("SET TimeZone = 'UTC'")
        except duckdb.Error as exc:
            raise translate_error(exc, name) from exc
        warehouse = cls(conn, name, lake)
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
            if self.lake is not None:
                cur.execute(f"USE {_lake.LAKE_ALIAS}")  # a cursor starts on the default db
            yield cur
        except duckdb.Error as exc:
            raise translate_error(exc, self.path) from exc
        finally:
            cur.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Commit everything done inside, or roll it all back and re-raise.

        On a lake the block holds the cluster write lock: one writer at a time, cluster-wide. A
        lock lost meanwhile (PostgreSQL restarted) fails the transaction instead of committing it.
        """
        with self._write_lock, self.exclusive(_lake.WRITE_LOCK) as confirm, self.cursor() as cur:
            cur.begin()
            try:
                yield cur
                confirm()
            except BaseException:
                with suppress(duckdb.Error):  # the catalog connection broke: nothing committed
                    cur.rollback()
                raise
            cur.commit()
            self.generation += 1

    def exclusive(self, name: str) -> AbstractContextManager[Callable[[], None]]:
        """A lock named `name` across every process on this lake (nothing for a file, which
        one process holds). The block gets `confirm()`, which raises once the lock is lost."""
        if self.lake is None:
            return nullcontext(_held)
        return _lake.cluster_lock(self.lake.conninfo, name)

    def checkpoint(self, now: datetime) -> dict[str, int]:
        """Let storage reclaim what was deleted; what was removed, by kind.

        A file: DuckDB reuses its freed blocks, so it stops growing. A lake: DuckLake's
        maintenance (inlined rows flushed to Parquet, small files merged); then the snapshots
        older than the lake's `expire_snapshots_after` expire and the data files that only they
        listed are deleted (the latest snapshot never expires); then the Parquet files no
        snapshot lists that are older than `ORPHAN_AGE` (left by a writer killed before its
        commit) are deleted. Under the cluster write lock: no other writer is mid-commit, and its
        files are never taken for orphans.
        """
        with self._write_lock, self.exclusive(_lake.WRITE_LOCK), self.cursor() as cur:
            cur.execute("CHECKPOINT")
            if self.lake is None:
                return {"orphaned_files": 0}
            alias = _lake.LAKE_ALIAS
            # Rollups are rewritten per run (DELETE + INSERT): their files carry delete files,
            # which the merge skips. Rewritten without their deleted rows, then merged, they stop
            # adding files every day.
            cur.execute("CALL ducklake_rewrite_data_files(?, delete_threshold => 0)", [alias])
            cur.execute("CALL ducklake_merge_adjacent_files(?)", [alias])

            def count(function: str, *options: tuple[str, datetime]) -> int:
                named = "".join(f", {name} => ?" for name, _ in options)
                # CALL: as `SELECT count(*) FROM` a table function, expiry removes nothing
                rows = cur.execute(
                    f"CALL {function}(?{named})",
                    [_lake.LAKE_ALIAS, *(value for _, value in options)],
                ).fetchall()
                return len(rows)

            return {
                "expired_snapshots": count(
                    "ducklake_expire_snapshots",
                    ("older_than", now - self.lake.expire_snapshots_after),
                ),
                "expired_files": count("ducklake_cleanup_old_files", ("older_than", now)),
                "orphaned_files": count(
                    "ducklake_delete_orphaned_files", ("older_than", now - ORPHAN_AGE)
                ),
            }

    def take_lease(self, name: str, holder: str, ttl: timedelta) -> bool:
        """Take or renew lease `name` for `ttl`; False while another holder has it.

        An embedded file has one writing process, which always holds every lease.
        """
        if self.lake is None:
            return True
        return _leases.take_lease(self.lake.conninfo, name, holder, ttl)

    def release_lease(self, name: str, holder: str) -> None:
        if self.lake is not None:
            _leases.release_lease(self.lake.conninfo, name, holder)

    def data_path_problem(self) -> str | None:
        """Why the lake's data files cannot be read now (None: they can, or an embedded file,
        whose readability `schema_version` already proves)."""
        if self.lake is None:
            return None
        cur = self._conn.cursor()
        try:
            return _lake.data_path_problem(cur, self.lake.data_path)
        finally:
            cur.close()

    def schema_version(self) -> int:
        """The newest migration applied (0: none, or no migration table at all)."""
        with self.cursor() as cur:
            try:
                row = cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
            except duckdb.CatalogException:
                return 0
        return int(row[0]) if row else 0

    def migrate(self) -> list[str]:
        """Apply, in order, every numbered migration not applied yet, each in its own transaction.

        Tracked by version number, so a migration merged later with a lower number than one
        already applied still runs.
        """
        applied: list[str] = []
        with self.transaction() as cur:  # on a lake, under the cluster lock: one creator
            cur.execute(_SCHEMA_VERSION_DDL)
        with self.cursor() as cur:
            done = {
                int(row[0]) for row in cur.execute("SELECT version FROM schema_version").fetchall()
            }
        for version, name, sql in _migrations():
            if version in done:
                continue
            try:
                with self.transaction() as cur:
                    if _applied(cur, version):
                        continue  # another process on the lake applied it meanwhile
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


def _held() -> None:
    """`confirm` of a file's lock, which its one process never loses."""


def _applied(cur: duckdb.DuckDBPyConnection, version: int) -> bool:
    row = cur.execute("SELECT count(*) FROM schema_version WHERE version = ?", [version]).fetchone()
    return bool(row and row[0])
