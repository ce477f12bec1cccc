"""Which warehouse to open: an embedded DuckDB file, or a DuckLake on a PostgreSQL catalog.

`duckdb://<path>` (`duckdb:///abs/file.duckdb`, `duckdb://data/rel.duckdb`) or a bare path is the
embedded file; `ducklake:postgres:<libpq conninfo>` is a lake whose Parquet files live under a
data path (a shared directory, or `s3://bucket/prefix`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from warehouse.errors import WarehouseError

__all__ = [
    "EXPIRE_SNAPSHOTS_AFTER",
    "LakeTarget",
    "Target",
    "parse_target",
    "redacted",
]

EMBEDDED_SCHEME = "duckdb://"
LAKE_SCHEME = "ducklake:postgres:"
EXPIRE_SNAPSHOTS_AFTER = timedelta(days=1)
"""Default age past which a lake's snapshots expire at the retention pass, and with them the
files only they listed (the application reads the latest snapshot only: `as_of` questions are
answered from `observed_at`, never by DuckLake time travel)."""
_PASSWORD_KEYWORD = re.compile(r"""(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s"]+)""", re.IGNORECASE)
_PASSWORD_IN_URI = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def redacted(text: str) -> str:
    """`text` with any libpq password (`password=...`, `postgresql://user:...@`) masked."""
    return _PASSWORD_IN_URI.sub(r"\1***@", _PASSWORD_KEYWORD.sub(r"\1***", text))


@dataclass(frozen=True, slots=True)
class LakeTarget:
    """A DuckLake: its catalog in PostgreSQL (`conninfo`), its data files under `data_path`
    (a directory, or `s3://bucket/prefix/`: see `lake_s3`), its snapshots kept
    `expire_snapshots_after` (GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER)."""

    conninfo: str
    data_path: str
    expire_snapshots_after: timedelta = EXPIRE_SNAPSHOTS_AFTER

    @property
    def url(self) -> str:
        return LAKE_SCHEME + self.conninfo

    def __str__(self) -> str:
        """For messages and logs: the password masked."""
        return f"{redacted(self.url)} (data {self.data_path})"


Target = Path | LakeTarget


def parse_target(
    url: str | Path,
    data_path: str | Path | None = None,
    expire_snapshots_after: timedelta = EXPIRE_SNAPSHOTS_AFTER,
) -> Target:
    """The target named by `url`; a lake needs `data_path` (GPUPRICES_LAKE_DATA_PATH)."""
    if isinstance(url, Path):
        return url
    if url.startswith(LAKE_SCHEME):
        conninfo = url[len(LAKE_SCHEME) :].strip()
        if not conninfo:
            raise WarehouseError(
                f"'{url}' names no catalog: use ducklake:postgres:dbname=... host=... user=..."
            )
        if not data_path:
            raise WarehouseError(
                "A DuckLake warehouse needs a data path: set GPUPRICES_LAKE_DATA_PATH "
                "(a shared directory or s3://bucket/prefix)"
            )
        if expire_snapshots_after <= timedelta(0):
            raise WarehouseError("GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER must be positive")
        return LakeTarget(conninfo, str(data_path), expire_snapshots_after)
    if url.startswith("ducklake:"):
        raise WarehouseError(
            f"'{url}': only PostgreSQL catalogs are supported (ducklake:postgres:)"
        )
    if url.startswith(EMBEDDED_SCHEME):
        url = url[len(EMBEDDED_SCHEME) :]
    if not url:
        raise WarehouseError("Empty warehouse URL: use duckdb:///path/to/file.duckdb")
    return Path(url)
