"""The lake's shared data path refusing writes (full, or read-only): the run fails with its
reason, the last good snapshot stays served, no catalog entry points at a missing file.

The tests run as root, which writes through permissions, so the fault is a small tmpfs mounted
for the test (filled up, or remounted read-only). Where mounting is not allowed they skip, and
fail in CI (`CI` set).
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.market.history import prune
from tests.lake.checks import assert_consistent, listed_files
from tests.lake.test_faults import collect, runs
from warehouse import Warehouse
from warehouse.db import ORPHAN_AGE

SIZE = "8m"
RETENTION = timedelta(days=90)
CHUNK_BYTES = 64 * 1024


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True)


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A fresh tmpfs of `SIZE`, unmounted after the test."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    try:
        mounted = _mount("-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mount_point))
    except FileNotFoundError as exc:
        mounted = subprocess.CompletedProcess([], 1, "", str(exc))
    if mounted.returncode != 0:
        message = (
            "cannot mount a tmpfs to refuse writes (needs root with CAP_SYS_ADMIN; mount exited "
            f"{mounted.returncode}): {mounted.stderr.strip()}"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{message} (the data path fault tests must run in CI)", pytrace=False)
        pytest.skip(message)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def fill(path: Path) -> Path:
    """Write zeros to `path` until its filesystem is full."""
    with path.open("wb") as out:
        try:
            while True:
                out.write(bytes(CHUNK_BYTES))
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return path


def parquet_files(root: Path) -> list[str]:
    return sorted(str(path) for path in root.rglob("*.parquet"))


def served_run_ids(warehouse: Warehouse) -> set[str]:
    with warehouse.cursor() as cur:
        return {row[0] for row in cur.execute("SELECT run_id FROM current_offers").fetchall()}


def test_a_full_data_path_fails_the_run_with_its_reason_and_the_next_run_stores(
    lake, small_filesystem: Path
):
    with Warehouse.open(lake.url, data_path=small_filesystem / "lake") as warehouse:
        filler = fill(small_filesystem / "filler")
        [refused] = collect(warehouse, "vastai")
        assert refused.status == "failed"
        assert refused.error is not None
        assert refused.error.startswith("storing the snapshot failed:")
        assert "No space left on device" in refused.error
        assert runs(warehouse) == [(refused.run_id, "failed", refused.error)]  # recorded
        assert served_run_ids(warehouse) == set()
        assert_consistent(warehouse)

        filler.unlink()
        [stored] = collect(warehouse, "vastai")
        assert stored.status == "ok"
        assert served_run_ids(warehouse) == {stored.run_id}
        assert_consistent(warehouse)

        # The refused run's partial file, which no snapshot lists, goes once a day old.
        [partial] = set(parquet_files(small_filesystem)) - set(listed_files(warehouse))
        assert prune(warehouse, datetime.now(UTC), RETENTION)["orphaned_files"] == 0  # too new
        day_old = (datetime.now(UTC) - ORPHAN_AGE - timedelta(hours=1)).timestamp()
        os.utime(partial, (day_old, day_old))
        assert prune(warehouse, datetime.now(UTC), RETENTION)["orphaned_files"] == 1
        assert parquet_files(small_filesystem) == sorted(listed_files(warehouse))
        assert_consistent(warehouse)


def test_a_read_only_data_path_fails_the_run_and_the_last_snapshot_stays_served(
    lake, small_filesystem: Path
):
    with Warehouse.open(lake.url, data_path=small_filesystem / "lake") as warehouse:
        [good] = collect(warehouse, "vastai")
        assert good.status == "ok"
        remounted = _mount("-o", "remount,ro", str(small_filesystem))
        assert remounted.returncode == 0, remounted.stderr
        try:
            [refused] = collect(warehouse, "vastai")
        finally:
            _mount("-o", "remount,rw", str(small_filesystem))
        assert refused.status == "failed"
        assert refused.error is not None
        assert "Read-only file system" in refused.error
        assert [run_id for run_id, _, _ in runs(warehouse)] == [good.run_id, refused.run_id]
        assert served_run_ids(warehouse) == {good.run_id}
        assert_consistent(warehouse)
