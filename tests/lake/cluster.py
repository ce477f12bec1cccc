"""Helpers for the cluster tests (and bench/lake.py): `gpuprices serve` processes on one lake,
their logs, and the recorded bodies they replay."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "runpod": FIXTURES / "runpod_catalog_v2.json",
    "lambda": FIXTURES / "lambda_instance_types.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}
"""One recorded body per provider."""


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.2
) -> float:
    """Poll `condition`; the seconds it took. Fails the test after `timeout_s`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


@dataclass
class Node:
    """One `gpuprices serve` process."""

    name: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lines(self, needle: str) -> list[str]:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line for line in text.splitlines() if needle in line]

    def runs(self, provider: str) -> int:
        return len(self.lines(f"run provider={provider} status=ok"))

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited:\n{self.log.read_text()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def write_config(directory: Path, lease_ttl_s: float, interval_s: float) -> Path:
    """A `GPUPRICES_CONFIG` file: every provider replayed from `REPLAYS` every `interval_s`."""
    replay_dir = directory / "replays"
    replay_dir.mkdir(exist_ok=True)
    for provider, body in REPLAYS.items():
        shutil.copy(body, replay_dir / f"{provider}{body.suffix}")
    intervals = ", ".join(f'{p} = "{interval_s:g}s"' for p in REPLAYS)
    path = directory / "gpuprices.toml"
    path.write_text(
        f'replay_dir = "{replay_dir}"\n'
        f'lease_ttl = "{lease_ttl_s:g}s"\n'
        "jitter_s = 0\n"
        "allow_private_webhooks = true\n"
        'webhook_poll = "1s"\n'
        f"intervals = {{ {intervals} }}\n"
    )
    return path


def start_node(name: str, args: list[str], env: dict[str, str], logs: Path) -> Node:
    port = free_port()
    log = logs / f"{name}.log"
    command = [sys.executable, "-m", "api", "serve", "--port", str(port), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    return Node(name, port, log, process)


def open_when_all_are_ready(url: str, data_path: str, ready: Any, results: Any) -> None:
    """In a child process: wait at the barrier `ready`, then open (create, migrate) the lake.

    Puts the schema version it sees on `results`, or the error's text.
    """
    from warehouse import Warehouse, WarehouseError

    ready.wait()
    try:
        with Warehouse.open(url, data_path=data_path) as warehouse:
            results.put(warehouse.schema_version())
    except WarehouseError as exc:
        results.put(str(exc))


_COMMIT_WAITER = """
SELECT a.application_name, a.query LIKE '%ducklake_data_file%'
FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE NOT l.granted AND l.locktype = 'relation' AND l.relation = 'ducklake_snapshot'::regclass
"""
"""Nodes whose DuckLake commit waits on the snapshot table, and whether it adds Parquet files
(a snapshot's offers; alert and webhook rows are few enough to be inlined in the catalog)."""


def kill_while_committing(node: Node, conninfo: str, timeout_s: float) -> None:
    """SIGKILL `node` while a DuckLake commit of its own that adds Parquet files (a run's
    offers) waits in PostgreSQL: the files are written, the catalog transaction is not done.

    The test holds DuckLake's snapshot table (`LOCK ... IN EXCLUSIVE MODE`: readers pass,
    commits wait) until a commit waits on it; another node's commit is let through and the
    next one awaited. Each node's catalog connection names it (`application_name`).
    """
    import psycopg

    started = time.monotonic()
    with psycopg.connect(conninfo, autocommit=True) as watcher:
        while time.monotonic() - started < timeout_s:
            with psycopg.connect(conninfo) as blocker:
                blocker.execute("LOCK TABLE ducklake_snapshot IN EXCLUSIVE MODE")
                waiting: list[str] = []
                while not waiting and time.monotonic() - started < timeout_s:
                    time.sleep(0.1)
                    waiting = [row[0] for row in watcher.execute(_COMMIT_WAITER)]
                if node.name in waiting:
                    node.stop(signal.SIGKILL)
                    return
    raise AssertionError(f"{node.name} did not commit within {timeout_s}s")
