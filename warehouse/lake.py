"""The DuckLake backend: extensions from PyPI packages, the ATTACH, and PostgreSQL locks.

Extensions come from the `gpuprices[lake]` packages (`duckdb-extension-ducklake`,
`-postgres`, `-httpfs`): each is installed from the package's file into a private
`extension_directory` and loaded; DuckDB never downloads one (`autoinstall_known_extensions`
is off).

Writers to one lake are serialised by a PostgreSQL advisory lock held for the whole DuckDB
transaction (`cluster_lock`), so DuckLake never sees two concurrent commits and a
read-then-write (a snapshot replacement, an outbox claim, a migration) is atomic cluster-wide.
Readers take no lock: each reads the latest committed lake snapshot.

ATTACH holds an advisory lock of its own (`ATTACH_LOCK`): on an empty catalog DuckLake creates
its metadata tables there, and two processes creating them at once fail in PostgreSQL
(`duplicate key value violates unique constraint "pg_type_typname_nsp_index"`), so any number
of processes may start together on a new lake.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from warehouse.errors import MissingExtraError, WarehouseError
from warehouse.lake_s3 import create_s3_secret, s3_reason
from warehouse.target import LakeTarget, redacted

__all__ = [
    "LAKE_ALIAS",
    "REMOTE_SCHEMES",
    "cluster_lock",
    "connect_lake",
    "data_path_problem",
    "extension_file",
]

LAKE_ALIAS = "lake"
EXTRA_HINT = "pip install 'gpuprices[lake]'"
_PACKAGES = {
    "ducklake": "duckdb_extension_ducklake",
    "postgres": "duckdb_extension_postgres",
    "httpfs": "duckdb_extension_httpfs",
}
_LOAD_NAMES = {"postgres": "postgres_scanner"}
S3_SCHEMES = ("s3://", "s3a://")
REMOTE_SCHEMES = (*S3_SCHEMES, "gs://", "http://", "https://")
"""Data paths on object storage (read and written through httpfs), not a local directory."""
WRITE_LOCK = "gpuprices:write"
"""The advisory lock every lake write transaction holds."""
ATTACH_LOCK = "gpuprices:attach"
"""The advisory lock held around ATTACH: the first one creates DuckLake's catalog tables."""


def extension_file(name: str) -> Path:
    """The `.duckdb_extension` file shipped in the PyPI package of extension `name`."""
    package = _PACKAGES[name]
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise MissingExtraError(
            f"The DuckLake warehouse needs the DuckDB {name} extension: {EXTRA_HINT}"
        ) from None
    root = Path(next(iter(module.__path__)))
    version = f"v{duckdb.__version__}"
    found = sorted((root / "extensions" / version).glob("*.duckdb_extension"))
    if not found:
        raise MissingExtraError(
            f"{package} has no extension for DuckDB {duckdb.__version__}: {EXTRA_HINT} "
            "(its version must match duckdb's)"
        )
    return found[0]


def _extension_directory() -> Path:
    path = Path(tempfile.gettempdir()) / f"gpuprices-duckdb-extensions-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def connect_lake(target: LakeTarget) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake attached as `lake` (and made the default)."""
    needed = ["ducklake", "postgres"]
    if target.data_path.startswith(REMOTE_SCHEMES):
        needed.append("httpfs")
    files = {name: extension_file(name) for name in needed}  # fails before connecting
    conn = duckdb.connect(
        ":memory:",
        config={
            "extension_directory": str(_extension_directory()),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        },
    )
    try:
        for name, file in files.items():
            conn.execute(f"INSTALL '{_quoted(str(file))}'")
            conn.execute(f"LOAD {_LOAD_NAMES.get(name, name)}")
        conn.execute("SET TimeZone = 'UTC'")
        if target.data_path.startswith(S3_SCHEMES):
            create_s3_secret(conn, os.environ)
        with cluster_lock(target.conninfo, ATTACH_LOCK):
            attach_lake(conn, target)
    except BaseException:
        conn.close()
        raise
    return conn


def attach_lake(conn: duckdb.DuckDBPyConnection, target: LakeTarget) -> None:
    conn.execute(
        f"ATTACH '{_quoted(target.url)}' AS {LAKE_ALIAS} (DATA_PATH '{_quoted(target.data_path)}')"
    )
    conn.execute(f"USE {LAKE_ALIAS}")


def data_path_problem(conn: duckdb.DuckDBPyConnection, data_path: str) -> str | None:
    """Why the lake's data files cannot be read now (None: they can), for readiness.

    A directory must exist and be listable; object storage must answer one listing of the
    data path (`glob`: a ListObjectsV2 in the bucket, so a deleted bucket or a refused key
    fails it, an empty prefix of a fresh lake does not). The reason names the path and the
    store's error, never a credential.
    """
    if not data_path.startswith(REMOTE_SCHEMES):
        path = Path(data_path)
        if not path.is_dir():
            return f"the lake's data path {data_path} is not a directory (removed?)"
        try:
            with os.scandir(path) as entries:
                next(entries, None)
        except OSError as exc:
            return f"the lake's data path {data_path} cannot be listed: {exc.strerror or exc}"
        return None
    pattern = data_path.rstrip("/") + "/*"
    try:
        conn.execute("SELECT count(*) FROM glob(?)", [pattern]).fetchone()
    except duckdb.Error as exc:
        message = str(exc)
        reason = s3_reason(message) if isinstance(exc, duckdb.HTTPException) else None
        return redacted(
            f"the lake's data path {data_path} cannot be listed: {reason or _first_line(exc)}"
        )
    return None


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")
    except ImportError:
        raise MissingExtraError(f"The DuckLake warehouse needs psycopg: {EXTRA_HINT}") from None


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for `name`."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@contextmanager
def pg_connection(conninfo: str) -> Iterator[Any]:
    """A psycopg connection to the catalog's PostgreSQL; its errors become `WarehouseError`."""
    psycopg = _psycopg()
    try:
        conn = psycopg.connect(conninfo, connect_timeout=10)
    except psycopg.Error as exc:
        raise catalog_error(conninfo, exc) from exc
    try:
        yield conn
    except psycopg.Error as exc:  # e.g. PostgreSQL restarted: "terminating connection ..."
        raise catalog_error(conninfo, exc) from exc
    finally:
        conn.close()


def catalog_error(conninfo: str, exc: BaseException) -> WarehouseError:
    return WarehouseError(f"PostgreSQL catalog ({redacted(conninfo)}): {_first_line(exc)}")


@contextmanager
def cluster_lock(conninfo: str, name: str = WRITE_LOCK) -> Iterator[Callable[[], None]]:
    """Hold the PostgreSQL advisory lock `name` (waiting for it) until the block ends.

    It is transaction-scoped on a connection of its own, so a process that dies frees it, and
    so does a PostgreSQL restart: the block gets `confirm`, which raises `WarehouseError` once
    the lock is no longer held (call it right before committing what the lock guards).
    Closing the connection at the end frees the lock.
    """
    with pg_connection(conninfo) as pg:
        pg.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(name)])

        def confirm() -> None:
            try:
                pg.execute("SELECT 1")
            except _psycopg().Error as exc:
                raise WarehouseError(
                    f"Lost the cluster lock {name} (PostgreSQL restarted?): {_first_line(exc)}"
                ) from exc

        yield confirm


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
