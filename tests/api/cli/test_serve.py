"""`gpuprices serve` as a user runs it: a real process, real HTTP, SIGTERM to stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.conftest import FIXTURES, free_port
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[3]


def test_serve_answers_then_stops_cleanly_on_sigterm(db_path):
    from pipeline.collection.collect import run_collection

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


@contextmanager
def overloaded_provider() -> Iterator[tuple[str, list[str]]]:
    """A provider stand-in on 127.0.0.1 that answers every request 503, Retry-After 30 s."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            paths.append(self.path)
            self.send_response(503)
            self.send_header("retry-after", "30")
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", paths
    finally:
        server.shutdown()
        server.server_close()


STOP_WITHIN_S = 2
"""Issue 18: `serve` stops within 2 s of SIGTERM, even mid retry wait or mid delivery."""


@contextmanager
def serving_local_only(db_path: Path, tmp_path: Path, **settings: str) -> Iterator[
    tuple[subprocess.Popen[str], list[str]]
]:
    """`gpuprices serve` collecting one provider whose requests all go to an overloaded stand-in
    on 127.0.0.1 (a `replay_dir` `<provider>.url`): nothing leaves the machine."""
    replays = tmp_path / "replays"
    replays.mkdir()
    with overloaded_provider() as (url, asked):
        (replays / "vastai.url").write_text(url)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("GPUPRICES_") and "proxy" not in key.lower()
        }
        env.update(
            PYTHONPATH=str(ROOT),
            GPUPRICES_PROVIDERS="vastai",
            GPUPRICES_REPLAY_DIR=str(replays),
            GPUPRICES_JITTER_S="0",
            **{f"GPUPRICES_{name.upper()}": value for name, value in settings.items()},
        )
        command = ["-m", "api", "serve", "--port", str(free_port()), "--db", str(db_path)]
        process = subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        try:
            yield process, asked
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def wait_for(condition, process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def stop_with_sigterm(process: subprocess.Popen[str]) -> str:
    sent_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=STOP_WITHIN_S) in (0, -signal.SIGTERM)
    print(f"serve stopped {time.monotonic() - sent_at:.2f} s after SIGTERM")
    output = process.stdout.read() if process.stdout else ""
    assert "Traceback" not in output
    return output


def test_sigterm_stops_serve_within_2_s_during_a_providers_retry_wait(db_path, tmp_path):
    with serving_local_only(db_path, tmp_path) as (process, asked):
        wait_for(lambda: bool(asked), process, "asked the provider")
        time.sleep(0.2)  # its 503 came: the run now waits 30 s to retry
        output = stop_with_sigterm(process)
    assert asked == ["/api/v0/bundles/"]  # one request; the retry was never made
    assert "status=abandoned" in output
    with Warehouse.open(db_path) as reopened, reopened.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM collection_runs").fetchone() == (0,)


def test_sigterm_stops_serve_within_2_s_during_a_webhook_attempt(db_path, tmp_path):
    from pipeline.alerts import alert_deliveries
    from pipeline.alerts.delivery import STOPPING
    from pipeline.collection.collect import utc_now
    from pipeline.settings import Settings
    from tests.pipeline.alerts.receiver import Answer, add_rule, enqueue, receiving

    local = Settings(db=db_path, allow_private_webhooks=True)
    with receiving(default=Answer(200, trickle_s=0.5)) as receiver:
        with Warehouse.open(db_path) as warehouse:
            rule_id = add_rule(warehouse, local, receiver.url, utc_now()).rule.rule_id
            enqueue(warehouse, rule_id, utc_now())
        with serving_local_only(
            db_path, tmp_path, allow_private_webhooks="true", webhook_poll="1s",
            webhook_timeout_s="30",
        ) as (process, _asked):
            wait_for(lambda: bool(receiver.requests), process, "sent the webhook")
            stop_with_sigterm(process)
    with Warehouse.open(db_path) as reopened:
        [log] = alert_deliveries(reopened, rule_id)
    assert [(a.outcome, a.error) for a in log.attempts] == [("retry", STOPPING)]
    assert log.delivery.status == "pending"  # sent again by the next `serve`
