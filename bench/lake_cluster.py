"""Lake cluster figures for bench/lake.py: how long a standby takes over a killed collector's
providers, and how long after a commit two API replicas agree on it.

Each figure is measured, never checked against a target.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient

from api.main import create_app
from pipeline.collect import run_collection
from pipeline.leases import RENEWALS_PER_TTL
from pipeline.settings import Settings
from warehouse import Warehouse

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "runpod": FIXTURES / "runpod_catalog_v2.json",
    "lambda": FIXTURES / "lambda_instance_types.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}
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


def _until(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until `condition` holds (polled every POLL_S)."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise SystemExit(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(POLL_S)
    return time.monotonic() - started


@dataclass
class _Collector:
    log: Path
    process: subprocess.Popen[bytes]

    def logged(self, needle: str) -> bool:
        return needle in self.log.read_text(errors="replace")


def _start_collector(
    name: str, own: tuple[str, ...], standby: tuple[str, ...], env: dict[str, str], tmp: Path
) -> _Collector:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "api", "serve", "--port", str(port),
             "--role", "collector", "--providers", ",".join(own)],
            env={**os.environ, **env, "GPUPRICES_STANDBY_FOR": ",".join(standby)},
            stdout=out, stderr=subprocess.STDOUT,
        )
    return _Collector(log, process)


def _config(tmp: Path, lease_ttl_s: float) -> Path:
    replay_dir = tmp / "replays"
    replay_dir.mkdir(exist_ok=True)
    for provider, body in REPLAYS.items():
        (replay_dir / f"{provider}{body.suffix}").write_bytes(body.read_bytes())
    intervals = ", ".join(f'{p} = "{INTERVAL_S}s"' for p in REPLAYS)
    path = tmp / "gpuprices.toml"
    path.write_text(
        f'replay_dir = "{replay_dir}"\nlease_ttl = "{lease_ttl_s}s"\njitter_s = 0\n'
        f"intervals = {{ {intervals} }}\n"
    )
    return path


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
            "GPUPRICES_CONFIG": str(_config(tmp, lease_ttl_s)),
        }
        first = _start_collector("first", FIRST, SECOND, env, tmp)
        second = _start_collector("second", SECOND, FIRST, env, tmp)
        try:
            _until(
                lambda: all(first.logged(f"run provider={p} status=ok") for p in FIRST)
                and all(second.logged(f"run provider={p} status=ok") for p in SECOND),
                120,
                "both collectors to store a run",
            )
            before = {p: second.log.read_text().count(f"run provider={p} status=ok") for p in FIRST}
            first.process.send_signal(signal.SIGKILL)
            took = _until(
                lambda: all(second.logged(f"lease collect:{p} taken") for p in FIRST),
                lease_ttl_s * 4 + 30,
                "the standby to take the leases",
            )
            stored = took + _until(
                lambda: all(
                    second.log.read_text().count(f"run provider={p} status=ok") > before[p]
                    for p in FIRST
                ),
                60,
                "the standby to store the taken providers",
            )
        finally:
            for node in (first, second):
                node.process.kill()
                node.process.wait()
    return took, stored


def agreement_seconds(server_conninfo: str, snapshots: int) -> list[float]:
    """Seconds from a snapshot's commit until two API replicas (each its own DuckDB and
    in-memory copy) both answer `/offers` from it."""
    delays = []
    with tempfile.TemporaryDirectory() as name:
        conninfo, data_path = new_lake(server_conninfo, Path(name))
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

                _until(lambda: serves_it(one) and serves_it(two), 30, "the replicas to agree")
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
