"""Issue 36: the lake's data in a bucket of a real S3-compatible server (moto's, enforcing
credentials, behind a loopback proxy): the store cut off mid-write, wrong credentials, and the
retention pass that merges small files and deletes what expired snapshots alone listed."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app
from pipeline.market.history import prune
from pipeline.market.serving import STATUS_TTL_S
from tests.lake.checks import assert_consistent, listed_files, stored_files
from tests.lake.test_backend import answers
from tests.lake.test_faults import collect, replica_settings, runs
from warehouse import Warehouse, parse_target
from warehouse.db import ORPHAN_AGE

RETENTION = timedelta(days=90)
EXPIRY = timedelta(days=1)
TICK = timedelta(hours=6)
"""Simulated runs: each provider every `TICK`, for two days."""
PROVIDERS = ("lambda", "vastai")


def served_run_ids(replica: TestClient, provider: str) -> set[str]:
    answer = replica.get("/offers", params={"provider": provider, "include_unavailable": "true"})
    assert answer.status_code == 200, answer.text
    return {offer["run_id"] for offer in answer.json()["offers"]}


def test_the_store_cut_off_mid_write_fails_that_run_and_the_next_run_succeeds(s3_lake, store):
    with (
        Warehouse.open(s3_lake.url, data_path=s3_lake.data_path) as collector,
        TestClient(create_app(replica_settings(s3_lake))) as replica,
    ):
        [good] = collect(collector, "lambda")
        assert good.status == "ok"
        time.sleep(STATUS_TTL_S)
        assert served_run_ids(replica, "lambda") == {good.run_id}
        files_before = stored_files(collector)

        def cut_mid_write(_provider: str, stage: str) -> None:
            if stage == "storing":
                store.proxy.cut_on_write()  # as the first object upload of the run passes

        cuts = store.proxy.cuts
        [cut_off] = collect(collector, "lambda", progress=cut_mid_write)
        assert store.proxy.cuts == cuts + 1 and store.proxy.down  # cut while uploading
        assert cut_off.status == "failed"
        assert cut_off.error is not None
        assert cut_off.error.startswith("storing the snapshot failed:")
        assert s3_lake.bucket in cut_off.error  # the reason names what could not be written

        # While it is down, readers keep answering the last snapshot.
        time.sleep(STATUS_TTL_S)
        assert served_run_ids(replica, "lambda") == {good.run_id}

        store.proxy.restore()
        assert runs(collector) == [
            (good.run_id, "ok", None),
            (cut_off.run_id, "failed", cut_off.error),  # the failure's reason, recorded
        ]
        assert_consistent(collector)  # nothing half-written is listed
        assert set(files_before) <= set(stored_files(collector))  # nothing committed lost

        # Back, the same process stores the next run: no restart.
        [next_run] = collect(collector, "lambda")
        assert next_run.status == "ok"
        time.sleep(STATUS_TTL_S)
        assert served_run_ids(replica, "lambda") == {next_run.run_id}
        assert_consistent(collector)

        # A day later the retention pass leaves in the bucket only what the catalog lists
        # (whatever the cut-off upload left, and what expired).
        prune(collector, datetime.now(UTC) + ORPHAN_AGE + timedelta(hours=1), RETENTION)
        assert stored_files(collector) == sorted(listed_files(collector))
        assert served_run_ids(replica, "lambda") == {next_run.run_id}


def test_wrong_credentials_are_one_clear_error_that_never_shows_a_secret(
    s3_lake, store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG)
    with Warehouse.open(s3_lake.url, data_path=s3_lake.data_path) as warehouse:
        [stored] = collect(warehouse, "lambda")
        assert stored.status == "ok"
        with TestClient(create_app(replica_settings(s3_lake))) as replica:
            shown = [replica.get(path).text for path in ("/healthz", "/readyz", "/metrics")]
            assert served_run_ids(replica, "lambda") == {stored.run_id}

    wrong = "wrong-" + store.secret[::-1]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    with Warehouse.open(s3_lake.url, data_path=s3_lake.data_path) as warehouse:
        [refused] = collect(warehouse, "lambda")
    assert refused.status == "failed"
    assert refused.error is not None
    assert "SignatureDoesNotMatch" in refused.error
    assert "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY" in refused.error

    monkeypatch.setenv("GPUPRICES_WAREHOUSE", s3_lake.url)
    monkeypatch.setenv("GPUPRICES_LAKE_DATA_PATH", str(s3_lake.data_path))
    result = CliRunner().invoke(app, ["offers", "--format", "json"])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert "SignatureDoesNotMatch" in line and "AWS_SECRET_ACCESS_KEY" in line

    everything = "\n".join([*shown, refused.error, result.output, caplog.text])
    for secret in (store.secret, wrong, store.key_id):
        assert secret not in everything


@pytest.mark.slow
def test_two_days_of_runs_and_retention_passes_leave_only_objects_the_catalog_references(
    s3_lake, store
):
    target = parse_target(s3_lake.url, s3_lake.data_path, EXPIRY)
    start = datetime.now(UTC).replace(microsecond=0)
    ticks_per_day = timedelta(days=1) // TICK

    def bucket() -> set[str]:
        """Every object in the bucket, listed by the server itself."""
        return {f"s3://{s3_lake.bucket}/{key}" for key in store.keys(s3_lake.bucket)}

    with Warehouse.open(target) as warehouse:
        for day in (0, 1):
            for tick in range(ticks_per_day):
                at = start + timedelta(days=day) + TICK * tick
                reports = [collect(warehouse, p, observed_at=at)[0] for p in PROVIDERS]
                assert [r.status for r in reports] == ["ok"] * len(PROVIDERS)
            before = answers(warehouse)
            objects_before = len(bucket())
            # The day's retention pass, at the day's end on the simulated clock.
            removed = prune(warehouse, start + timedelta(days=day + 1), RETENTION)
            assert answers(warehouse) == before  # the merged layout answers the same
            assert_consistent(warehouse)
            if day == 0:
                # Nothing is a day old yet: small files merged, every snapshot kept.
                assert removed["expired_snapshots"] == 0
                assert set(listed_files(warehouse)) < bucket()  # the merged-away files stay
            else:
                # Day one's snapshots expired: the files only they listed are gone.
                assert removed["expired_snapshots"] > 0 and removed["expired_files"] > 0
                assert len(bucket()) < objects_before
                with warehouse.cursor() as cur:
                    row = cur.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()
                assert row == (1,)  # only the latest: it lists every file the catalog keeps
                assert sorted(bucket()) == sorted(listed_files(warehouse))
                assert sorted(bucket()) == stored_files(warehouse)
