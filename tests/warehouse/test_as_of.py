"""Offers as of a past time: each provider's last good snapshot then, and its rows as stored."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa

from scrapers import vastai
from tests.conftest import OBSERVED_AT, fixture_bytes
from warehouse import RunRow
from warehouse.current import CurrentOffers
from warehouse.history import snapshot_times
from warehouse.queries import insert_run

T0 = OBSERVED_AT
MINUTE = timedelta(minutes=1)


def run(run_id: str, provider: str, observed_min: int, finished_min: int, status="ok") -> RunRow:
    observed, finished = T0 + observed_min * MINUTE, T0 + finished_min * MINUTE
    return RunRow(run_id, provider, observed, finished, observed, status, 0, 0, None, "test")


def vastai_offers(run: RunRow) -> pa.Table:
    return vastai.parse(fixture_bytes("vastai_bundles.json"), run.observed_at).table


RUNS = [
    run("v1", "vastai", 0, 1),
    run("v2", "vastai", 10, 11),
    run("v3", "vastai", 10, 12),  # same snapshot time as v2, finished later: in force
    run("v4", "vastai", 15, 16, status="failed"),
    run("v5", "vastai", 30, 31),  # after the time asked
    run("l1", "lambda", 5, 6),
    run("l2", "lambda", 25, 26),
]

REFERENCE = """
    SELECT provider, arg_max(run_id, {'observed': observed_at, 'finished': finished_at})
    FROM collection_runs WHERE status = 'ok' AND observed_at <= ? GROUP BY provider
    ORDER BY provider
"""
"""The definition: the newest good snapshot, the last finished among those taken at once."""


def store(warehouse, runs: list[RunRow]) -> None:
    for row in runs:
        with warehouse.transaction() as conn:
            offers = vastai_offers(row) if row.provider == "vastai" and row.status == "ok" else None
            insert_run(conn, row, offers)


def test_as_of_takes_each_providers_last_good_snapshot_and_the_last_finished_of_a_tie(warehouse):
    store(warehouse, RUNS)
    with warehouse.cursor() as cur:
        for minutes in (0, 5, 10, 20, 29, 40):
            at = T0 + minutes * MINUTE
            expected = cur.execute(REFERENCE, [at]).fetchall()
            got = [(s["provider"], s["run_id"]) for s in snapshot_times(cur, at)]
            assert got == expected, minutes
        assert [s["run_id"] for s in snapshot_times(cur, T0 + 20 * MINUTE)] == ["l1", "v3"]


def test_a_copy_as_of_a_time_holds_each_providers_snapshot_then_as_stored(warehouse):
    store(warehouse, RUNS)
    at = T0 + 20 * MINUTE
    with warehouse.cursor() as cur:
        runs = [(s["run_id"], s["observed_at"]) for s in snapshot_times(cur, at)]
        copy = CurrentOffers.load(cur, past=(runs, at))
        (stored,) = cur.execute(
            "SELECT count(*) FROM offer_observations WHERE run_id = 'v3'"
        ).fetchone()
    assert copy.size == stored > 0
    assert set(copy.table.column("run_id").to_pylist()) == {"v3"}  # lambda's l1 holds none
    assert set(copy.table.column("observed_at").to_pylist()) == {T0 + 10 * MINUTE}


def test_rows_made_once_per_distinct_time_equal_pyarrows_rows():
    from warehouse.offers import arrow_rows

    at = pa.array([T0, None, T0, T0 + MINUTE], pa.timestamp("us", tz="UTC"))
    table = pa.table({"observed_at": at, "offer_id": ["a", "b", None, "d"], "n": [1, 2, 3, None]})
    assert arrow_rows(table) == table.to_pylist()
    assert arrow_rows(table.slice(0, 0)) == []
