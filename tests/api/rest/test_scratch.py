"""Uploads live in a directory their process owns; what a killed server left is removed by the
next start-up, and a live server's is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.scratch import uploads_root
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL

ROOT = Path(__file__).resolve().parents[3]
HOLDER = """
import sys, time
from api.rest.scratch import ScratchSpace
space = ScratchSpace.open()
(space.path / "replay-x").mkdir()
(space.path / "replay-x" / "vastai.body").write_bytes(b"a" * 1_000_000)  # mid-upload
print(space.path, flush=True)
time.sleep(120)
"""


@pytest.fixture
def tmp_dir(tmp_path, monkeypatch):
    """This test's temporary directory, for this process and the ones it starts."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _holder(tmp_dir: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process holding its upload directory, as a serving process does."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_dir), "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def _start_once(db_path: Path) -> None:
    with TestClient(create_app(Settings(db=db_path, scheduler=False))) as client:
        assert client.get("/healthz").status_code == 200


def test_what_a_killed_server_left_is_removed_at_start_up_and_a_live_ones_is_kept(tmp_dir, db_path):
    killed, left = _holder(tmp_dir)
    alive, held = _holder(tmp_dir)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert (left / "replay-x" / "vastai.body").is_file()  # what the crash leaves
        _start_once(db_path)
        assert not left.exists()
        assert (held / "replay-x" / "vastai.body").is_file()
    finally:
        alive.kill()
        alive.wait(timeout=30)
        killed.stdout.close()
        alive.stdout.close()
    assert list(uploads_root().iterdir()) == [held]  # the app's own: removed at its clean stop


def test_an_upload_is_written_under_the_process_directory_and_removed_after(
    tmp_dir, db_path, warehouse
):
    app = create_app(Settings(db=db_path, scheduler=False), warehouse)
    vast = ("replay", ("vastai.json", (FIXTURES / "vastai_bundles.json").read_bytes()))
    with TestClient(app, base_url=LOOPBACK_URL, client=("127.0.0.1", 50000)) as client:
        scratch = app.state.scratch.path
        assert scratch.parent == uploads_root()
        assert client.post("/collections", files=[vast]).status_code == 200
        assert [p.name for p in scratch.iterdir()] == [".owner"]
    assert not scratch.exists()
    assert not list(tmp_dir.glob("gpuprices-replay-*"))
