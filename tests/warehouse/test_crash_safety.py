"""SIGKILL mid-write leaves every earlier snapshot intact and the next run working."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery, current_offers
from tests.conftest import FIXTURES
from warehouse import Warehouse

COLLECTOR = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pipeline.collection.collect import run_collection
    from warehouse import Warehouse

    db, body = Path(sys.argv[1]), Path(sys.argv[2])
    def progress(provider, stage):
        print(stage, flush=True)
    with Warehouse.open(db) as warehouse:
        while True:
            run_collection(["vastai"], warehouse, replays={"vastai": body}, progress=progress)
    """
)


@pytest.fixture
def big_body(tmp_path: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from ingest import synthetic_body

    path = tmp_path / "vast-20k.json"
    path.write_bytes(synthetic_body(20_000, seed=7))
    return path


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_write_keeps_earlier_snapshots_intact(db_path, big_body):
    process = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR, str(db_path), str(big_body)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert process.stdout is not None
    completed = 0
    try:
        for line in process.stdout:
            stage = line.strip()
            if stage == "ok":
                completed += 1
            elif stage == "failed":
                pytest.fail("a collection run failed before the kill: the test cannot go on")
            elif stage == "storing" and completed == 2:
                process.send_signal(signal.SIGKILL)  # the third run is writing now
                break
    finally:
        process.kill()
        process.wait(timeout=30)
    assert completed == 2

    with Warehouse.open(db_path) as warehouse:
        with warehouse.cursor() as cur:
            runs = cur.execute(
                "SELECT run_id, status, offer_count FROM collection_runs ORDER BY started_at"
            ).fetchall()
            stored = dict(
                cur.execute(
                    "SELECT run_id, count(*) FROM offer_observations GROUP BY run_id"
                ).fetchall()
            )
        assert [status for _, status, _ in runs] == ["ok", "ok"]  # the interrupted run is absent
        for run_id, _, offer_count in runs:
            assert stored[run_id] == offer_count
        assert len(current_offers(warehouse, OfferQuery())) > 0
        [report] = run_collection(
            ["vastai"], warehouse, replays={"vastai": FIXTURES / "vastai_bundles.json"}
        )
        assert report.status == "ok"
