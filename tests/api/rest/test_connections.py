"""`serve`'s own limits on a real server: idle and slow connections cannot starve `/healthz`."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from api.rest.connections import RESERVED_FILES, max_connections
from pipeline.settings import Settings
from tests.conftest import free_port
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[3]
IDLE_CONNECTIONS = 300
FILE_LIMIT = 256
"""The open-file limit the finding's server ran under."""


@contextmanager
def serving(db_path: Path, file_limit: int | None = None, **env: str) -> Iterator[int]:
    """`gpuprices serve` in its own process (under `file_limit` open files), until the end."""
    Warehouse.open(db_path).close()
    port = free_port()

    def limit_files() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (file_limit, file_limit))

    process = subprocess.Popen(
        [sys.executable, "-m", "api", "serve", "--no-scheduler", "--port", str(port),
         "--db", str(db_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        preexec_fn=limit_files,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"serve did not start: {process.communicate()[0]}")
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def enough_files():
    """This test process holds the idle sockets: room for them under its own limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * IDLE_CONNECTIONS
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_default_cap_is_sized_from_the_open_file_limit():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert max_connections(Settings()) <= max(8, soft - RESERVED_FILES)
    assert max_connections(Settings(max_connections=100)) == 100


def test_300_idle_connections_under_a_256_file_limit_do_not_fail_healthz(db_path, enough_files):
    # a long header timeout: the connection cap, not the timeout, keeps the server answering
    with (
        serving(db_path, FILE_LIMIT, GPUPRICES_HEADER_TIMEOUT_S="120") as port,
        ExitStack() as held,
    ):
        for _ in range(IDLE_CONNECTIONS):
            held.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
        answers = [
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code for _ in range(6)
        ]
    assert answers == [200] * 6


def test_a_connection_that_never_finishes_its_headers_is_closed(db_path):
    with serving(db_path, GPUPRICES_HEADER_TIMEOUT_S="1") as port:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as slow:
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            assert slow.recv(1024) == b""  # closed by the server, without an answer
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
