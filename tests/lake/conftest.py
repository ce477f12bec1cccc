"""A throwaway PostgreSQL 15 cluster (Debian's packages) on 127.0.0.1 for the lake tests, and a
real S3-compatible server (moto's, from the dev extra; `objectstore.py`) for `s3://` data paths.

Each is started once per session in a temporary directory, on a free port, stopped at the end.
Without PostgreSQL installed the lake tests skip locally, and fail in CI (`CI` set): never a
silent skip. moto comes with `pip install -e '.[dev]'`: without it the `s3://` tests fail.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.lake.objectstore import ObjectStore, object_store

SUPERUSER = "postgres"


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_postgres(args: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the `postgres` user then."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *args]
    return args


@dataclass(frozen=True)
class Postgres:
    port: int
    bin_dir: Path
    data: Path
    root: Path

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"dbname={dbname} host=127.0.0.1 port={self.port} user={SUPERUSER}"

    def create_database(self) -> str:
        import psycopg

        name = f"lake_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            _as_postgres([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-w", *args]),
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c max_connections=200 "
            "-c track_activity_query_size=65536"  # whole DuckLake commits in pg_stat_activity
        )
        self._pg_ctl("-o", options, "-l", str(self.root / "log"), "start")

    def stop(self) -> None:
        """A fast shutdown: every client connection is cut, as when the server restarts."""
        self._pg_ctl("-m", "fast", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def running(self) -> bool:
        status = subprocess.run(
            _as_postgres([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"]),
            capture_output=True,
        )
        return status.returncode == 0


@pytest.fixture
def postgres_back_after(postgres: Postgres) -> Iterator[Postgres]:
    """The server, started again after a test that stops it, whatever that test's outcome."""
    yield postgres
    if not postgres.running():
        postgres.start()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    bin_dir = _pg_bin()
    if bin_dir is None or (os.geteuid() == 0 and shutil.which("runuser") is None):
        message = "PostgreSQL is not installed (apt-get install -y postgresql)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: the lake tests must run in CI", pytrace=False)
        pytest.skip(message)
    pytest.importorskip("psycopg", reason="pip install -e '.[dev,lake]'")
    root = Path(tempfile.mkdtemp(prefix="gpuprices-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
    subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
    )
    server = Postgres(free_port(), bin_dir, data, root)
    server.start()
    try:
        yield server
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class Lake:
    url: str
    conninfo: str
    data_path: Path | str
    """A directory, or `s3://bucket/prefix/`."""
    bucket: str | None = None


@pytest.fixture
def lake(postgres: Postgres, tmp_path: Path) -> Lake:
    """A fresh, empty lake: its own catalog database and data directory."""
    conninfo = postgres.conninfo(postgres.create_database())
    return Lake(f"ducklake:postgres:{conninfo}", conninfo, tmp_path / "lake-data")


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """moto's S3 server on 127.0.0.1, credentials enforced, behind a proxy tests can cut."""
    with object_store(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture
def s3_lake(
    postgres: Postgres, store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Lake]:
    """A fresh, empty lake whose data is in a new bucket of `store`, reached as a user would:
    the standard AWS variables set in the environment (which `serve` processes inherit)."""
    for name, value in store.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("GPUPRICES_S3_URL_STYLE", raising=False)
    bucket = store.new_bucket()
    conninfo = postgres.conninfo(postgres.create_database())
    yield Lake(f"ducklake:postgres:{conninfo}", conninfo, f"s3://{bucket}/gpuprices/", bucket)
    store.proxy.restore()  # whatever the test cut


@pytest.fixture(params=["directory", "s3"])
def each_lake(request: pytest.FixtureRequest) -> Lake:
    """A fresh lake with its data in a local directory, then one with it in a bucket."""
    return request.getfixturevalue("lake" if request.param == "directory" else "s3_lake")
