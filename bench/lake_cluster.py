"""Lake cluster figures for bench/lake.py: how long a standby takes over a killed collector's
providers, and how long after a commit two API replicas agree on it.

Each figure is measured, never checked against a target.
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.collection.leases import RENEWALS_PER_TTL
from pipeline.settings import Settings
from warehouse import Warehouse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.lake
from tests.lake.cluster import REPLAYS, start_node, wait_until, write_config  # noqa: E402

FIRST, SECOND = ("vastai", "runpod"), ("lambda", "coreweave")
INTERVAL_S = 2
POLL_S = 0.02


def new_lake(server_conninfo: str, data_root: Path) -> tuple[str, Path]:
    """A fresh catalog database on the server of `server_conninfo`, and a data directory."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    conninfo = " ".join(
        part for part in server_conninfo.split() if not part.startswith("dbname=")
    )
    return f"dbname={name} {conninfo}", data_root / name


def takeover_seconds(server_conninfo: str, lease_ttl_s: float) -> tuple[float, float]:
    """One round: two collectors on a new lake; the first SIGKILLed once both collect.

    Returns (seconds from the kill until the standby holds all the dead one's leases, seconds
    until it has stored a run of each of them).
    """
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        conninfo, data_path = new_lake(server_conninfo, tmp)
        env = {
            "GPUPRICES_WAREHOUSE": f"ducklake:postgres:{conninfo}",
            "GPUPRICES_LAKE_DATA_PATH": str(data_path),
            "GPUPRICES_CONFIG": str(write_config(tmp, lease_ttl_s, INTERVAL_S)),
        }
        first, second = (
            start_node(
                label,
                ["--role", "collector", "--providers", ",".join(own)],
                {**env, "GPUPRICES_STANDBY_FOR": ",".join(standby)},
                tmp,
            )
            for label, own, standby in (("first", FIRST, SECOND), ("second", SECOND, FIRST))
        )
        try:
            wait_until(
                lambda: all(first.runs(p) for p in FIRST) and all(second.runs(p) for p in SECOND),
                120,
                "both collectors to store a run",
            )
            before = {p: second.runs(p) for p in FIRST}
            first.stop(signal.SIGKILL)
            took = wait_until(
                lambda: all(second.lines(f"lease collect:{p} taken") for p in FIRST),
                lease_ttl_s * 4 + 30,
                "the standby to take the leases",
                POLL_S,
            )
            stored = took + wait_until(
                lambda: all(second.runs(p) > before[p] for p in FIRST),
                60,
                "the standby to store the taken providers",
                POLL_S,
            )
        finally:
            for node in (first, second):
                node.stop(signal.SIGKILL)
    return took, stored


def agreement_seconds(
    server_conninfo: str, snapshots: int, bucket_path: str | None = None
) -> list[float]:
    """Seconds from a snapshot's commit until two API replicas (each its own DuckDB and
    in-memory copy) both answer `/offers` from it; data in a directory, or under `bucket_path`
    (`s3://bucket/prefix/`, the S3 client from the AWS variables in the environment)."""
    delays = []
    with tempfile.TemporaryDirectory() as name:
        conninfo, directory = new_lake(server_conninfo, Path(name))
        data_path = bucket_path or str(directory)
        url = f"ducklake:postgres:{conninfo}"
        settings = Settings(warehouse=url, lake_data_path=str(data_path), role="api")
        with (
            Warehouse.open(url, data_path=data_path) as collector,
            TestClient(create_app(settings)) as one,
            TestClient(create_app(settings)) as two,
        ):
            start = datetime.now(UTC) - timedelta(minutes=snapshots)
            for index in range(snapshots):
                [report] = run_collection(
                    ["lambda"], collector, replays=REPLAYS, env={},
                    observed_at=start + timedelta(minutes=index),
                )
                committed = time.monotonic()

                def serves_it(replica: TestClient, run_id: str = report.run_id) -> bool:
                    offers = replica.get("/offers").json()["offers"]
                    return {o["run_id"] for o in offers} == {run_id}

                wait_until(
                    lambda: serves_it(one) and serves_it(two), 30, "the replicas to agree", POLL_S
                )
                delays.append(time.monotonic() - committed)
    return delays


def report(server_conninfo: str, lease_ttl_s: float, rounds: int, snapshots: int) -> None:
    period_s = lease_ttl_s / RENEWALS_PER_TTL
    print(f"\nstandby takeover, lease_ttl {lease_ttl_s:g} s (leases of "
          f"{lease_ttl_s - period_s:.3g} s renewed every {period_s:.3g} s), {rounds} rounds, "
          "collector SIGKILLed once both collect:")
    taken, stored = zip(*(takeover_seconds(server_conninfo, lease_ttl_s) for _ in range(rounds)),
                        strict=True)
    for label, values in (("leases taken", taken), ("first runs stored", stored)):
        print(f"  {label:20} median {statistics.median(values):6.2f} s  max {max(values):6.2f} s"
              f"  ({statistics.median(values) / lease_ttl_s:.2f} lease times; "
              f"{', '.join(f'{v:.2f}' for v in values)})")
    delays = agreement_seconds(server_conninfo, snapshots)
    print(f"two API replicas agree after a commit ({snapshots} snapshots): "
          f"median {statistics.median(delays):.2f} s, max {max(delays):.2f} s")


if __name__ == "__main__":  # e.g. against an existing server: lake_cluster.py 'host=... user=...'
    report(sys.argv[1], float(os.environ.get("LEASE_TTL_S", "5")), 3, 5)
