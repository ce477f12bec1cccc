"""Issue 19: the lake starts together and survives its catalog's faults.

Processes opening a new lake at once, PostgreSQL going away in the middle of a collection, and
two API replicas agreeing after a snapshot commits. (A collector killed mid-commit: see
test_cluster.py; the data path refusing writes: test_data_path.py.)
"""

from __future__ import annotations

import multiprocessing
import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.market.serving import STATUS_TTL_S
from pipeline.settings import Settings
from tests.lake.checks import assert_consistent
from tests.lake.cluster import REPLAYS, open_when_all_are_ready, wait_until
from warehouse import RunRow, Warehouse, WarehouseError
from warehouse.queries import insert_run

PROCESSES = 4
ALL = {"include_unavailable": "true"}


def replica_settings(lake) -> Settings:
    return Settings(warehouse=lake.url, lake_data_path=str(lake.data_path), role="api")


def collect(warehouse: Warehouse, provider: str, **options):
    return run_collection([provider], warehouse, replays=REPLAYS, env={}, **options)


def runs(warehouse: Warehouse) -> list[tuple[str, str, str | None]]:
    with warehouse.cursor() as cur:
        return cur.execute(
            "SELECT run_id, status, error FROM collection_runs ORDER BY started_at"
        ).fetchall()


def test_four_processes_opening_an_empty_lake_at_the_same_moment_all_open_it(lake):
    context = multiprocessing.get_context("spawn")
    ready, results = context.Barrier(PROCESSES), context.Queue()
    processes = [
        context.Process(
            target=open_when_all_are_ready,
            args=(lake.url, str(lake.data_path), ready, results),
        )
        for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    seen = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)

    with Warehouse.open(lake.url, data_path=lake.data_path) as warehouse:
        version = warehouse.schema_version()
        with warehouse.cursor() as cur:
            applied = cur.execute(
                "SELECT version, count(*) FROM schema_version GROUP BY version ORDER BY version"
            ).fetchall()
    assert seen == [version] * PROCESSES  # none failed creating the catalog or migrating
    assert version > 0
    assert all(count == 1 for _, count in applied)  # each migration applied once


def test_postgresql_restarting_during_a_collection_fails_that_run_and_the_next_one_succeeds(
    lake, postgres_back_after
):
    postgres = postgres_back_after
    readiness_while_down: list[int] = []

    def restart_around_the_write(_provider: str, stage: str) -> None:
        """The catalog goes away as the snapshot is written, and is back for the next write
        (the failed run's record)."""
        if stage != "storing":
            return
        if not readiness_while_down:
            postgres.stop()
            readiness_while_down.append(replica.get("/readyz").status_code)
        elif not postgres.running():
            postgres.start()

    with (
        Warehouse.open(lake.url, data_path=lake.data_path) as collector,
        TestClient(create_app(replica_settings(lake))) as replica,
    ):
        assert replica.get("/readyz").status_code == 200
        [cut_off] = collect(collector, "lambda", progress=restart_around_the_write)

        assert readiness_while_down == [503]
        assert cut_off.status == "failed"
        assert cut_off.error is not None
        assert cut_off.error.startswith("storing the snapshot failed:")
        assert "PostgreSQL catalog" in cut_off.error
        assert runs(collector) == [(cut_off.run_id, "failed", cut_off.error)]  # reason recorded

        # The replica recovers by itself; the same collector process collects again.
        wait_until(lambda: replica.get("/readyz").status_code == 200, 30, "the replica ready")
        [next_run] = collect(collector, "lambda")
        assert next_run.status == "ok"
        assert next_run.offer_count > 0
        time.sleep(STATUS_TTL_S)
        offers = replica.get("/offers", params={"provider": "lambda"}).json()["offers"]
        assert {offer["run_id"] for offer in offers} == {next_run.run_id}
        assert_consistent(collector)


def test_a_write_whose_cluster_lock_a_restart_freed_is_rolled_back_not_committed(
    lake, postgres_back_after
):
    at = datetime.now(UTC)
    row = RunRow(
        run_id="lambda-cut-off", provider="lambda", started_at=at, finished_at=at,
        observed_at=at, status="failed", offer_count=0, reject_count=0, error="x", source="test",
    )
    with Warehouse.open(lake.url, data_path=lake.data_path) as warehouse:
        with (
            pytest.raises(WarehouseError, match="Lost the cluster lock"),
            warehouse.transaction() as cur,
        ):
            insert_run(cur, row, None)
            postgres_back_after.restart()  # another writer could take the lock now
        assert runs(warehouse) == []
        with warehouse.transaction() as cur:  # the next write reconnects by itself
            insert_run(cur, row, None)
        assert [run_id for run_id, _, _ in runs(warehouse)] == ["lambda-cut-off"]


def test_two_api_replicas_answer_the_same_offers_once_a_status_ttl_has_passed_after_a_commit(
    lake,
):
    """The stated bound (README): a replica serves a committed snapshot at most `STATUS_TTL_S`
    (plus the one read it then does) after the commit."""
    settings = replica_settings(lake)
    with (
        Warehouse.open(lake.url, data_path=lake.data_path) as collector,
        TestClient(create_app(settings)) as one,
        TestClient(create_app(settings)) as two,
    ):
        first = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
        for observed_at in (first, first + timedelta(minutes=5)):
            [report] = collect(collector, "lambda", observed_at=observed_at)
            assert report.status == "ok"
            time.sleep(STATUS_TTL_S)
            after = [r.get("/offers", params=ALL).json() for r in (one, two)]
            for answer in after:
                assert {offer["run_id"] for offer in answer["offers"]} == {report.run_id}
            assert after[0]["offers"] == after[1]["offers"]
            assert after[0]["count"] == report.offer_count > 0
