"""Raw observations over HTTP: the Hive-partitioned Parquet folder `gpuprices export` writes,
sent as one tar archive (`GET /export/observations.tar`) and unpacked by the CLI as it is."""

from __future__ import annotations

import io
import tarfile
import tempfile
from datetime import datetime
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.market.history import export_partitioned
from warehouse import Warehouse

__all__ = ["pack_observations", "unpack_observations"]

_COUNT_FILE = "COUNT"
"""The archive's first member: how many observations its Parquet files hold."""


def pack_observations(warehouse: Warehouse, since: datetime, until: datetime) -> bytes:
    """`date=YYYY-MM-DD/provider=NAME/*.parquet` of [since, until), as an uncompressed tar
    (Parquet is compressed already)."""
    with tempfile.TemporaryDirectory(prefix="gpuprices-export-") as folder:
        count = export_partitioned(warehouse, since, until, Path(folder))
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            text = str(count).encode()
            info = tarfile.TarInfo(_COUNT_FILE)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text))
            for path in sorted(Path(folder).rglob("*.parquet")):
                tar.add(path, arcname=str(path.relative_to(folder)))
    return buffer.getvalue()


def unpack_observations(archive: bytes, target: Path) -> int:
    """Unpack what `pack_observations` made into `target`; the number of observations.

    Only regular files under `target` are written (tarfile's `data` filter)."""
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            counted = tar.extractfile(_COUNT_FILE)
            count = int(counted.read()) if counted is not None else 0
            members = [m for m in tar.getmembers() if m.name != _COUNT_FILE]
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, KeyError, ValueError) as exc:
        raise PipelineError(f"the server's export is not a gpuprices archive ({exc})") from None
    return count
