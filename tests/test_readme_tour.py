"""The README's five-minute tour, verbatim, against a running demo (as a new user follows it).

Every command of the tour's `sh` blocks is read from README.md itself and run by bash in a
folder of its own, beside `gpuprices demo` (started as the tour says, on a free port instead of
8000: the tour's `http://127.0.0.1:8000` is that port here, its `.venv/bin/gpuprices` this
checkout's CLI). Each must exit 0. A model named by its Hugging Face id has its config.json read
from `HF_ENDPOINT`, here a loopback server answering the recorded configs of
tests/fixtures/hf_configs (tests never leave loopback).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.conftest import FIXTURES, free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTED_URL = "http://127.0.0.1:8000"
TOUR_HEADING = "## A five-minute tour"
DEMO_START_S = 600
"""Filling the demo database replays every recording once an hour over its history."""
TOUR_HISTORY = "1h"
"""The history the tour's demo is filled with: every command runs on any length of it (a day of
it, with the page's day-over-day change, is tests/pipeline/collection/test_demo.py's), and each
hour is one more replay of every recording."""


def tour_commands(text: str) -> list[str]:
    """The commands of the tour section's `sh` blocks, continuation lines joined."""
    section = text.split(TOUR_HEADING, 1)[1].split("\n## ", 1)[0]
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        commands.extend(line.strip() for line in joined.splitlines() if line.strip())
    return commands


def test_the_tour_has_every_kind_of_question():
    commands = tour_commands(README.read_text("utf-8"))
    words = {command.split()[1] for command in commands if command.startswith(".venv/bin/")}
    assert {"offers", "quote", "alerts", "history", "index", "market"} <= words
    assert any(command.startswith("curl ") for command in commands)
    assert "GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true make demo" in README.read_text("utf-8")


class _HubConfigs(BaseHTTPRequestHandler):
    """`/{org}/{name}/resolve/main/config.json` from tests/fixtures/hf_configs, else 404."""

    def do_GET(self) -> None:
        match = re.fullmatch(r"/([^/]+)/([^/]+)/resolve/main/config\.json", self.path)
        path = FIXTURES / "hf_configs" / f"{match[1]}--{match[2]}.config.json" if match else None
        if path is None or not path.is_file():
            self.send_response(404)
            self.end_headers()
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HubConfigs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def demo(tmp_path_factory, hub) -> Iterator[tuple[Path, str]]:
    """`gpuprices demo` in a folder of its own (its database: data/demo.duckdb there), with
    private webhooks allowed as the tour starts it, and a `.venv/bin/gpuprices` running this
    checkout."""
    folder = tmp_path_factory.mktemp("tour")
    shim = folder / ".venv" / "bin" / "gpuprices"
    shim.parent.mkdir(parents=True)
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m api "$@"\n', "utf-8")
    shim.chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GPUPRICES_")},
        "PYTHONPATH": str(ROOT),
        "GPUPRICES_ALLOW_PRIVATE_WEBHOOKS": "true",
        "HF_ENDPOINT": hub,
    }
    port = free_port()
    process = subprocess.Popen(
        [str(shim), "demo", "--port", str(port), "--history", TOUR_HISTORY],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + DEMO_START_S
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "the demo did not start"
                time.sleep(0.5)
        yield folder, url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_every_tour_command_exits_0_beside_the_demo(demo, hub):
    folder, url = demo
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GPUPRICES_")},
        "PYTHONPATH": str(ROOT),
        "HF_ENDPOINT": hub,
        "COLUMNS": "100",
    }
    failures = []
    for command in tour_commands(README.read_text("utf-8")):
        run = subprocess.run(
            ["bash", "-c", command.replace(DOCUMENTED_URL, url)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode != 0 or "Traceback" in run.stderr:
            failures.append(f"{command}\n  exit {run.returncode}: {run.stderr.strip()[-500:]}")
    assert not failures, "\n".join(failures)
    assert (folder / "task.yaml").read_text("utf-8").strip(), "the quote was emitted as a task"
