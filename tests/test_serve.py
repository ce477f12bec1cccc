"""`gpuprices serve` as a user runs it: a real process, real HTTP, SIGTERM to stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import FIXTURES
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_answers_then_stops_cleanly_on_sigterm(db_path):
    from pipeline.collect import run_collection

    with Warehouse.open(db_path) as warehouse:
        run_collection(["vastai"], warehouse, replays={"vastai": FIXTURES / "vastai_bundles.json"})
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "api",
            "serve",
            "--no-scheduler",
            "--port",
            str(port),
            "--db",
            str(db_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert health.json()["status"] == "ok"
        offers = httpx.get(f"http://127.0.0.1:{port}/offers", params={"gpu": "A100-80GB"})
        assert offers.json()["count"] == 2
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz").json()
        assert ready["scheduler"] == "disabled"
        process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal so the exit says why.
        assert process.wait(timeout=20) in (0, -signal.SIGTERM)
        assert process.stdout is not None
        assert "Application shutdown complete" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    with Warehouse.open(db_path) as reopened:  # closed cleanly: the lock is gone
        assert reopened.schema_version() >= 1
