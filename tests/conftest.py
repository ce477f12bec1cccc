from __future__ import annotations

import importlib
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from warehouse import Warehouse

# No wall-clock deadlines: a property holds or not whatever the machine's load (timings live in
# bench/, never in tests).
hypothesis_settings.register_profile("gpuprices", deadline=None)
hypothesis_settings.load_profile("gpuprices")

FIXTURES = Path(__file__).parent / "fixtures"
OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
LOOPBACK_URL = "http://127.0.0.1:8000"
"""Base URL of test clients that write: a server without an API key takes writes from a loopback
`Host` only (`api.rest.ambient`), and TestClient's default host is `testserver`."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for a server a test starts (loopback only)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


SHARED_DIRECTORIES = ("tests/lake/", "tests/e2e/")
"""Test folders whose conftest.py starts a costly server for the whole session (a PostgreSQL
cluster and an S3 server; `gpuprices serve` and Chromium)."""


def work_unit(nodeid: str) -> str:
    """What one `make test` worker runs whole: a shared folder's tests, else a module's (its
    module-scoped fixtures, a database built once, are then built by one worker only)."""
    module = nodeid.split("::", 1)[0]
    return next((folder for folder in SHARED_DIRECTORIES if module.startswith(folder)), module)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: known only when it is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (make test) hands out `work_unit`s, in the order collected."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnitScheduling(config, log)


TERMINAL_VARIABLES = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: in the run's first process
def pytest_configure_node(node: Any) -> None:
    """Each worker is told the terminal variables this process's os.environ holds: pytest
    imports readline, which sets COLUMNS=80 and LINES in the process's environment behind
    os.environ's back, and the workers, started after, would inherit them where a run in one
    process has none."""
    node.workerinput["terminal_variables"] = {
        name: os.environ.get(name) for name in TERMINAL_VARIABLES
    }


def pytest_configure(config: pytest.Config) -> None:
    """A worker's terminal variables as the first process sees them (`pytest_configure_node`);
    then the CLI's module-level rich consoles are made with no COLUMNS set. Rich keeps the
    width COLUMNS gives when a console is made: made by the first command a test runs (the CLI
    imports a command's modules when it runs it) under that test's COLUMNS, they would keep its
    width for every later test; made here, they read each test's COLUMNS at every print."""
    workerinput = getattr(config, "workerinput", {})
    for name, value in workerinput.get("terminal_variables", {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    with pytest.MonkeyPatch.context() as env:
        env.delenv("COLUMNS", raising=False)
        for module in ("api.cli.common", "api.cli.warehouse"):
            importlib.import_module(module)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `slow` (tens of seconds each) first, the others as collected: with
    `make test`'s workers (pytest-xdist) none is left running one of them alone at the end.
    Nothing else depends on the order: every test stands alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "gpuprices.duckdb"


def copy_of(template: Path, db_path: Path) -> Path:
    """`db_path`, a database of the test's own, made a copy of `template` (a closed database
    built once per session or module): the test may write, the template stays as built."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, db_path)
    return db_path


def open_copy(template: Path, db_path: Path) -> Warehouse:
    """The warehouse at `copy_of(template, db_path)`."""
    return Warehouse.open(copy_of(template, db_path))


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new database, migrated once per session (migrating takes most of opening a new file)."""
    path = tmp_path_factory.mktemp("migrated") / "gpuprices.duckdb"
    Warehouse.open(path).close()
    return path


def build_template(folder: Path, build: Callable[[Warehouse, Path], object]) -> Path:
    """A closed database at `folder` (a module's or the session's), migrated then filled by
    `build(warehouse, folder)`: built once, copied into tests' own warehouses (`fill_from`)."""
    path = folder / "template.duckdb"
    with Warehouse.open(path) as wh:
        build(wh, folder)
    return path


def module_template(build: Callable[[Warehouse, Path], object]):
    """A module-scoped fixture giving `build_template`'s database for `build`: assign it to the
    fixture's name in the test module (`history = module_template(build_history)`)."""

    @pytest.fixture(scope="module")
    def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return build_template(tmp_path_factory.mktemp(build.__name__), build)

    return template


def fill_from(warehouse: Warehouse, template: Path) -> Warehouse:
    """Copy every row of `template` into the test's new `warehouse` (the same object the test
    holds, so its app and its asserts see one database): what building it again would store."""
    with warehouse.cursor() as cur:
        cur.execute(f"ATTACH '{template}' AS template (READ_ONLY)")
        try:
            tables = [
                name
                for (name,) in cur.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = 'template' "
                    "AND schema_name = 'main' AND table_name <> 'schema_version'"
                ).fetchall()
            ]
            with warehouse.transaction() as write:
                for name in tables:
                    write.execute(f'INSERT INTO main."{name}" SELECT * FROM template.main."{name}"')
        finally:
            cur.execute("DETACH template")
    return warehouse


@pytest.fixture
def warehouse(db_path: Path, migrated_template: Path) -> Iterator[Warehouse]:
    """A new, migrated database of the test's own."""
    with open_copy(migrated_template, db_path) as wh:
        yield wh


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's real keys or settings."""
    import os

    for name in list(os.environ):
        if name.startswith("GPUPRICES_") or name.endswith("_API_KEY") or name.startswith("HF_"):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _nebius_grpc_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """gRPC's C core opens its own sockets, past the loopback guard (pytest-socket): the Nebius
    SDK is pointed at a closed loopback port unless a test serves a fake API there."""
    from scrapers import nebius

    monkeypatch.setattr(nebius, "API_ADDRESS", "127.0.0.1:9")
    monkeypatch.delenv(nebius.ENV_KEY, raising=False)
    monkeypatch.delenv(nebius.PROJECT_ENV, raising=False)


@pytest.fixture
def client_factory():
    """Clients as collection runs build them (User-Agent, retries), minus the real sleeping."""
    from scrapers import RetryTransport, build_client

    waits: list[float] = []

    def make():
        transport = RetryTransport(sleep=waits.append)
        return build_client(transport)

    make.waits = waits  # type: ignore[attr-defined]
    return make


class Clock:
    """A clock the test moves."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta) -> datetime:
        self.now += delta
        return self.now


@pytest.fixture
def db_held_by_another_process(db_path: Path):
    """The database file held open by another process (as a running server would), then freed."""
    import subprocess
    import sys

    Warehouse.open(db_path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
            "print('held', flush=True); time.sleep(30)",
            str(db_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture(scope="session")
def launcher_read(tmp_path_factory):
    """`read(launcher_key, paths)`: what SkyPilot's or dstack's own parser read from our task
    files, in their throwaway venvs (`tests/launcher_venvs.py`)."""
    from pipeline.workload.launch import get_launcher
    from tests.launcher_venvs import read_with_launcher

    def read(key: str, paths):
        home = tmp_path_factory.mktemp(f"{key}-home")
        return read_with_launcher(get_launcher(key), list(paths), home)

    return read
