"""Lake-on-object-storage figures for bench/lake.py: one run's commit time with the data in a
bucket of a local S3-compatible server (moto's, `tests/lake/objectstore.py`) against a local
directory, a replica's time to see a new snapshot from the bucket, and a simulated month of runs
with the daily retention pass: the bucket's object count and size as the month grows.

The month is compressed: each simulated day's runs are committed as fast as they go and the day
ends with `prune` (as `serve` runs it daily), the snapshot expiry set to the real time one
simulated day took, so that each pass keeps about one day of snapshots as a real deployment with
the default `GPUPRICES_LAKE_EXPIRE_SNAPSHOTS_AFTER=1d` does. Each figure is measured, never
checked against a target.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

from pipeline.market.history import prune
from pipeline.settings import Settings
from warehouse import LakeTarget, Warehouse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.lake
from lake_cluster import agreement_seconds, new_lake  # noqa: E402

from tests.lake.objectstore import ObjectStore, object_store  # noqa: E402

PROVIDERS = ("vastai", "runpod", "lambda", "coreweave")
RETENTION = timedelta(days=90)
Snapshot = Callable[[random.Random, str, datetime, int], pa.Table]
Ingest = Callable[[Warehouse, list[tuple[str, datetime, pa.Table]]], list[float]]
Reads = Callable[[Settings, Warehouse, datetime], dict[str, float]]


@contextmanager
def s3_environment(store: ObjectStore) -> Iterator[None]:
    """The AWS variables a user sets for `store`, in this process's environment."""
    saved = {name: os.environ.get(name) for name in store.env()}
    os.environ.update(store.env())
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _bucket_totals(store: ObjectStore, bucket: str) -> tuple[int, int]:
    objects = store.keys(bucket)
    return len(objects), sum(objects.values())


def commit_times(
    catalog: str, store: ObjectStore, batches: list[tuple[str, datetime, pa.Table]], ingest: Ingest
) -> dict[str, float]:
    """Median seconds per provider run stored: data in a local directory, then in a bucket."""
    medians = {}
    with tempfile.TemporaryDirectory() as name:
        for label in ("directory", "bucket"):
            conninfo, directory = new_lake(catalog, Path(name))
            data_path = f"s3://{store.new_bucket()}/gpuprices/" if label == "bucket" else directory
            with Warehouse.open(f"ducklake:postgres:{conninfo}", data_path=data_path) as wh:
                medians[label] = statistics.median(ingest(wh, batches))
    return medians


def month(
    catalog: str,
    store: ObjectStore,
    snapshot: Snapshot,
    ingest: Ingest,
    days: int,
    runs_per_day: int,
    offers: int,
    reads: Reads,
) -> Iterator[tuple[int, int, int, float] | dict[str, float]]:
    """(day, objects, bytes, seconds the day took) after each simulated day's retention pass,
    as each day ends; then the read latencies (`reads`) on the month's merged layout."""
    rng = random.Random(11)
    bucket = store.new_bucket()
    conninfo, _ = new_lake(catalog, Path(tempfile.gettempdir()))
    every = timedelta(days=1) / runs_per_day
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=days)
    with Warehouse.open(f"ducklake:postgres:{conninfo}", data_path=f"s3://{bucket}/g/") as wh:
        for day in range(days):
            began = time.monotonic()
            for tick in range(runs_per_day):
                at = start + timedelta(days=day) + every * tick
                ingest(wh, [(p, at, snapshot(rng, p, at, offers)) for p in PROVIDERS])
            took = time.monotonic() - began
            assert isinstance(wh.lake, LakeTarget)
            wh.lake = replace(wh.lake, expire_snapshots_after=timedelta(seconds=took))
            prune(wh, datetime.now(UTC), RETENTION)
            objects, size = _bucket_totals(store, bucket)
            yield day + 1, objects, size, time.monotonic() - began
        url = f"ducklake:postgres:{conninfo}"
        settings = Settings(warehouse=url, lake_data_path=f"s3://{bucket}/g/", scheduler=False)
        yield reads(settings, wh, start + timedelta(days=days - 1))


def report(
    catalog: str,
    batches: list[tuple[str, datetime, pa.Table]],
    snapshot: Snapshot,
    ingest: Ingest,
    reads: Reads,
    *,
    agreements: int,
    days: int,
    runs_per_day: int,
    offers: int,
) -> None:
    with (
        tempfile.TemporaryDirectory() as logs,
        object_store(Path(logs) / "moto.log") as store,
        s3_environment(store),
    ):
        print(f"\nlake on a local S3-compatible server (moto {_moto_version()}, 127.0.0.1, "
              "credentials enforced, path-style):")
        medians = commit_times(catalog, store, batches, ingest)
        print(f"  one run's commit, median of {len(batches)}: directory "
              f"{medians['directory'] * 1000:.0f} ms, bucket {medians['bucket'] * 1000:.0f} ms "
              f"({medians['bucket'] / medians['directory']:.2f}x)")
        bucket_path = f"s3://{store.new_bucket()}/agree-{uuid.uuid4().hex[:6]}/"
        delays = agreement_seconds(catalog, agreements, bucket_path)
        print(f"  a replica sees a new snapshot (two replicas agree, {agreements} commits): "
              f"median {statistics.median(delays):.2f} s, max {max(delays):.2f} s")
        print(f"\nsimulated month: {days} days x {runs_per_day} runs a day x "
              f"{len(PROVIDERS)} providers x {offers} offers (a 5-minute cadence is 288 "
              "runs a day), daily retention pass, snapshots expire after one day:")
        print(f"  {'day':>4} {'objects':>8} {'MB':>8} {'day took':>9}")
        for row in month(catalog, store, snapshot, ingest, days, runs_per_day, offers, reads):
            if isinstance(row, dict):
                print("  reads on the month's merged layout (median ms): " + ", ".join(
                    f"{name} {seconds * 1000:.1f}" for name, seconds in row.items()))
                continue
            day, objects, size, took = row
            print(f"  {day:>4} {objects:>8} {size / 1e6:>8.2f} {took:>8.1f}s", flush=True)


def _moto_version() -> str:
    from importlib.metadata import version

    return version("moto")
