"""`gpuprices serve` on 127.0.0.1 over a replayed day of data, and Debian's headless Chromium.

Nothing here installs or downloads anything: Chromium comes from the Debian packages `chromium`
and `chromium-driver` (`make browser`, or `.ci/run` in CI). Without it these tests are skipped
locally, and fail in CI (where `CI` is set), so a missing browser never passes unnoticed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port
from tests.e2e.seed import seed
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""As this machine's probe runs it: without the background-networking flags Chromium keeps
trying to reach Google's hosts, and the closed network refuses each attempt."""
START_TIMEOUT_S = 30

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason=f"{CHROMIUM} is missing: run `make browser` (Debian chromium + chromium-driver)",
)
"""Skipped only on a machine without Chromium and outside CI: in CI a missing browser fails."""


def _serve_command() -> list[str]:
    script = Path(sys.executable).with_name("gpuprices")
    return [str(script)] if script.exists() else [sys.executable, "-m", "api"]


@pytest.fixture(scope="session")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("e2e")
    db = folder / "gpuprices.duckdb"
    with Warehouse.open(db) as warehouse:
        seed(warehouse, folder / "bodies", datetime.now(UTC))
    return db


@pytest.fixture(scope="session")
def base_url(seeded_db: Path) -> Iterator[str]:
    """`gpuprices serve --no-scheduler` as a user starts it, on a free loopback port."""
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GPUPRICES_") and not k.endswith("_API_KEY")
    }
    command = [
        *_serve_command(),
        "serve",
        "--no-scheduler",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--db",
        str(seeded_db),
    ]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if process.poll() is not None:
                    output = process.stdout.read() if process.stdout else ""
                    pytest.fail(f"gpuprices serve exited: {output}")
                assert time.monotonic() < deadline, "gpuprices serve did not start"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Chromium, for these tests only: Playwright's sync API runs an event loop on the main
    thread while it is open, and a later test calling `asyncio.run` or `anyio.run` there would
    be refused ("already running"), so it closes once the last e2e test is done."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, base_url: str) -> Iterator[object]:
    """A fresh tab at 1280 px that fails the test on any script error or refused request."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base_url)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    yield tab
    context.close()
    assert problems == []


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
