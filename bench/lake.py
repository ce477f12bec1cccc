"""Lake benchmark: ingest, /offers and /prices/history on a DuckLake beside the embedded file;
then the cluster's figures (`lake_cluster.py`): standby takeover time after a collector is
SIGKILLed, and how long after a commit two API replicas agree; then the lake's data in a bucket
of a local S3-compatible server (`lake_s3.py`): a run's commit time against a directory, a
replica's time to see a new snapshot, and a simulated month's object count and bucket size.

The same seeded snapshots go into both, in the same run; each figure is printed with its ratio
(lake / file). The lake's catalog is a throwaway PostgreSQL cluster started here (Debian's
`postgresql` package, as root run as the `postgres` user) unless `--catalog` names one (the
cluster figures then create databases on its server: the role needs CREATEDB).

    .venv/bin/python bench/lake.py --snapshots 48 --offers 2000 --lease-ttl 5 --takeovers 3
    .venv/bin/python bench/lake.py --object-store-only --days 30 --runs-per-day 4
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from scrapers.models import OFFER_SCHEMA
from warehouse import RunRow, Warehouse
from warehouse.queries import insert_run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lake_cluster import report as cluster_report  # noqa: E402
from lake_s3 import report as object_store_report  # noqa: E402

PROVIDERS = ("vastai", "runpod", "lambda", "coreweave")
GPUS = ("H100-80GB", "A100-80GB", "L40S", "RTX 4090", "H200")
SNAPSHOT_EVERY = timedelta(minutes=30)
REPEATS = 20


def snapshot(rng: random.Random, provider: str, observed_at: datetime, offers: int) -> pa.Table:
    gpus = [rng.choice(GPUS) for _ in range(offers)]
    counts = [rng.choice((1, 2, 4, 8)) for _ in range(offers)]
    per_gpu = [round(rng.uniform(0.3, 4.0), 4) for _ in range(offers)]
    columns = {
        "provider": [provider] * offers,
        "offer_id": [f"{provider}-{i}" for i in range(offers)],
        "gpu": gpus,
        "gpu_raw": gpus,
        "form_factor": [None] * offers,
        "gpu_count": counts,
        "vram_gb": [80.0] * offers,
        "pricing": [rng.choice(("on_demand", "spot")) for _ in range(offers)],
        "price_per_hour": [p * c for p, c in zip(per_gpu, counts, strict=True)],
        "price_per_gpu_hour": per_gpu,
        "price_quoted_per": ["instance"] * offers,
        "region": [rng.choice(("US", "EU-SE-1", "CA")) for _ in range(offers)],
        "available": [rng.random() > 0.1 for _ in range(offers)],
        "observed_at": [observed_at] * offers,
    }
    arrays = [
        pa.array(columns.get(f.name, [None] * offers), type=f.type) for f in OFFER_SCHEMA
    ]
    return pa.Table.from_arrays(arrays, schema=OFFER_SCHEMA)


def ingest(warehouse: Warehouse, batches: list[tuple[str, datetime, pa.Table]]) -> list[float]:
    """Seconds per provider run stored (one transaction each, as collections do)."""
    seconds = []
    for provider, observed_at, table in batches:
        row = RunRow(
            run_id=f"{provider}-{observed_at:%Y%m%dT%H%M%S}",
            provider=provider,
            started_at=observed_at,
            finished_at=observed_at,
            observed_at=observed_at,
            status="ok",
            offer_count=table.num_rows,
            reject_count=0,
            error=None,
            source="bench",
        )
        started = time.perf_counter()
        with warehouse.transaction() as conn:
            insert_run(conn, row, table)
        seconds.append(time.perf_counter() - started)
    return seconds


def latency(call: Callable[[], object]) -> float:
    call()  # warm
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def serve_times(settings: Settings, warehouse: Warehouse, since: datetime) -> dict[str, float]:
    with TestClient(create_app(settings, warehouse)) as client:
        return {
            "/offers": latency(lambda: client.get("/offers").raise_for_status()),
            "/offers?as_of": latency(
                lambda: client.get(
                    "/offers", params={"as_of": (since + SNAPSHOT_EVERY * 3).isoformat()}
                ).raise_for_status()
            ),
            "/prices/history": latency(
                lambda: client.get(
                    "/prices/history", params={"gpu": "H100", "since": since.isoformat()}
                ).raise_for_status()
            ),
        }


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise SystemExit("PostgreSQL is not installed: apt-get install -y postgresql")
    bin_dir = Path(found[-1]).parent
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="gpuprices-bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = str(root / "data")
    run = lambda *args: subprocess.run([*as_pg, *args], check=True, capture_output=True)  # noqa: E731
    run(str(bin_dir / "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync")
    run(str(bin_dir / "pg_ctl"), "-D", data, "-o", f"-h 127.0.0.1 -p {port} -k {root}",
        "-l", str(root / "log"), "-w", "start")
    try:
        yield f"dbname=postgres host=127.0.0.1 port={port} user=postgres"
    finally:
        subprocess.run([*as_pg, str(bin_dir / "pg_ctl"), "-D", data, "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=48, help="per provider")
    parser.add_argument("--offers", type=int, default=2000, help="per snapshot")
    parser.add_argument("--catalog", help="libpq conninfo of an empty PostgreSQL database")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lease-ttl", type=float, default=5.0, help="seconds, for takeovers")
    parser.add_argument("--takeovers", type=int, default=3, help="collector kills to time")
    parser.add_argument("--agreements", type=int, default=5, help="commits to time replicas on")
    parser.add_argument("--commits", type=int, default=20, help="runs timed, directory vs bucket")
    parser.add_argument("--days", type=int, default=30, help="simulated month on the bucket")
    parser.add_argument("--runs-per-day", type=int, default=4, help="per provider (5 min: 288)")
    parser.add_argument("--month-offers", type=int, default=100, help="per run in the month")
    parser.add_argument(
        "--object-store-only", action="store_true", help="only the bucket's figures"
    )
    args = parser.parse_args()
    print(f"python {platform.python_version()}  duckdb {duckdb.__version__}  cpus {os.cpu_count()}")
    rng = random.Random(args.seed)
    start = datetime.now(UTC).replace(microsecond=0) - SNAPSHOT_EVERY * args.snapshots
    batches = [
        (p, start + SNAPSHOT_EVERY * i, snapshot(rng, p, start + SNAPSHOT_EVERY * i, args.offers))
        for i in range(args.snapshots)
        for p in PROVIDERS
    ]
    print(f"{len(batches)} provider runs of {args.offers} offers")
    with tempfile.TemporaryDirectory() as tmp, (
        throwaway_postgres() if args.catalog is None else _given(args.catalog)
    ) as catalog:
        file_settings = Settings(db=Path(tmp) / "bench.duckdb", scheduler=False)
        lake_settings = Settings(
            warehouse=f"ducklake:postgres:{catalog}",
            lake_data_path=str(Path(tmp) / "lake"),
            scheduler=False,
        )
        results: dict[str, dict[str, float]] = {}
        if args.object_store_only:
            object_store(args, catalog, batches)
            return
        for name, settings in (("file", file_settings), ("lake", lake_settings)):
            with Warehouse.open(settings.warehouse_target) as wh:
                stored = ingest(wh, batches)
                results[name] = {
                    "ingest run (median)": statistics.median(stored),
                    "ingest rows/s": len(batches) * args.offers / sum(stored),
                    **serve_times(settings, wh, start),
                }
        print_comparison(results)
        cluster_report(catalog, args.lease_ttl, args.takeovers, args.agreements)
        object_store(args, catalog, batches)


def object_store(
    args: argparse.Namespace, catalog: str, batches: list[tuple[str, datetime, pa.Table]]
) -> None:
    object_store_report(
        catalog, batches[: args.commits], snapshot, ingest, serve_times,
        agreements=args.agreements, days=args.days, runs_per_day=args.runs_per_day,
        offers=args.month_offers,
    )


def print_comparison(results: dict[str, dict[str, float]]) -> None:
    print(f"{'':24} {'file':>10} {'lake':>10} {'lake/file':>10}")
    for key, file_value in results["file"].items():
        lake_value = results["lake"][key]
        unit = "" if key.endswith("/s") else " ms"
        scale = 1 if key.endswith("/s") else 1000
        print(
            f"{key:24} {file_value * scale:>10.1f} {lake_value * scale:>10.1f} "
            f"{lake_value / file_value:>9.2f}x{unit}"
        )


@contextmanager
def _given(catalog: str) -> Iterator[str]:
    yield catalog


if __name__ == "__main__":
    main()
