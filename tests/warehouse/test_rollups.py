"""Rollups kept at ingest equal the same figures computed from the summaries in bulk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.api.rest.routes.test_index import replay, vastai_body
from tests.conftest import module_template, open_copy
from warehouse import OfferFilters
from warehouse.history import HistoryFilters, history_sql
from warehouse.rollups import rebuild_rollups

T0 = datetime(2026, 3, 1, 22, 5, tzinfo=UTC)
# Out of order on purpose: a replay of an older time arrives after later snapshots.
TIMES_AND_FACTORS = [
    (T0, 1.0),
    (T0 + timedelta(minutes=30), 1.3),
    (T0 + timedelta(hours=2, minutes=10), 0.7),
    (T0 + timedelta(minutes=15), 0.5),
    (T0 + timedelta(days=1, hours=3), 1.1),
]


def ingest(warehouse, folder):
    for at, factor in TIMES_AND_FACTORS:
        replay(warehouse, folder, "vastai", at, vastai_body(h100=True, factor=factor))
        replay(warehouse, folder, "lambda", at)


ingested_template = module_template(ingest)
"""`ingest`'s database, built once for the module."""


@pytest.fixture
def ingested(ingested_template, db_path):
    """The replays ingested, in a database of the test's own at `db_path`."""
    with open_copy(ingested_template, db_path) as wh:
        yield wh


def rows(warehouse, sql: str, params=()) -> list[tuple]:
    with warehouse.cursor() as cur:
        return sorted(cur.execute(sql, list(params)).fetchall(), key=repr)


@pytest.mark.parametrize("table", ["index_rollups", "history_rollups", "history_days"])
def test_rollups_written_run_by_run_equal_a_bulk_rebuild(ingested, table):
    incremental = rows(ingested, f"SELECT * FROM {table}")
    with ingested.transaction() as conn:
        rebuild_rollups(conn)
    assert incremental and rows(ingested, f"SELECT * FROM {table}") == incremental


@pytest.mark.parametrize("interval", ["1h", "1d", "6h"])
@pytest.mark.parametrize("since_minutes", [0, 20])
def test_history_from_rollups_equals_history_from_summaries(ingested, interval, since_minutes):
    since = T0.replace(minute=0) - timedelta(hours=1) + timedelta(minutes=since_minutes)
    until = T0 + timedelta(days=1, hours=3, minutes=1)
    scope = OfferFilters(gpus=frozenset({"H100-80GB", "A100-80GB"}), include_unavailable=True)
    f = HistoryFilters(scope, interval, since, until)
    got = rows(ingested, *history_sql(f))
    expected = rows(ingested, *history_sql(f, rolled_up=False))
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected, strict=True):
        assert a[:5] == b[:5]
        assert a[5:] == pytest.approx(b[5:])


@pytest.mark.parametrize("interval", ["1h", "1d"])
def test_the_apis_json_points_from_rollups_equal_those_computed_from_summaries(ingested, interval):
    from warehouse.history import points_json_sql

    scope = OfferFilters(gpus=frozenset({"H100-80GB"}), include_unavailable=True)
    f = HistoryFilters(scope, interval, T0 - timedelta(hours=3, minutes=7), T0 + timedelta(days=2))
    rolled, params = history_sql(f, with_json=True)
    summed, summed_params = history_sql(f, rolled_up=False, with_json=True)
    got = rows(ingested, points_json_sql(rolled), params)
    assert got and got == rows(ingested, points_json_sql(summed), summed_params)


WINDOWS = {
    "whole days and partial days at both ends": (
        T0 - timedelta(hours=3, minutes=7),
        T0 + timedelta(days=2),
    ),
    "from a day's start to a day's end": (
        T0.replace(hour=0, minute=0),
        T0.replace(hour=0, minute=0) + timedelta(days=2),
    ),
    "hours inside one day": (T0 - timedelta(hours=2, minutes=50), T0 + timedelta(hours=1)),
}


@pytest.mark.parametrize("interval", ["1h", "1d"])
@pytest.mark.parametrize("window", WINDOWS)
def test_the_apis_series_joined_from_whole_days_equal_those_computed_from_summaries(
    ingested, interval, window
):
    from warehouse.history import points_json_sql
    from warehouse.history_json import price_history_json

    since, until = WINDOWS[window]
    scope = OfferFilters(gpus=frozenset({"H100-80GB", "A100-80GB"}), include_unavailable=True)
    f = HistoryFilters(scope, interval, since, until)
    summed, params = history_sql(f, rolled_up=False, with_json=True)
    with ingested.cursor() as cur:
        got = price_history_json(cur, f)
        expected = [tuple(row) for row in cur.execute(points_json_sql(summed), params).fetchall()]
    assert got and got == expected


@pytest.mark.parametrize("interval", ["1h", "1d"])
def test_a_day_rewritten_after_the_api_read_it_is_read_again(ingested, tmp_path, interval):
    from warehouse.history import points_json_sql
    from warehouse.history_json import price_history_json

    midnight = T0.replace(hour=0, minute=0)
    scope = OfferFilters(gpus=frozenset({"H100-80GB"}), include_unavailable=True)
    f = HistoryFilters(scope, interval, midnight, midnight + timedelta(days=2))
    with ingested.cursor() as cur:
        before = price_history_json(cur, f)  # the whole days are now kept by this process
    # A replay of an earlier time of that day, at prices no snapshot had: the day changes.
    replay(ingested, tmp_path, "vastai", T0 - timedelta(hours=3), vastai_body(h100=True, factor=4))
    summed, params = history_sql(f, rolled_up=False, with_json=True)
    with ingested.cursor() as cur:
        after = price_history_json(cur, f)
        expected = [tuple(row) for row in cur.execute(points_json_sql(summed), params).fetchall()]
    assert after == expected and after != before


def test_the_days_kept_stay_under_their_size_least_recently_used_out():
    from warehouse.history_json import _Kept

    kept = _Kept(limit=10)
    keys = [("1h", ("H100-80GB", "SXM", "runpod", "on_demand"), day, 7) for day in range(3)]
    kept.put(keys[0], "aaaa")
    kept.put(keys[1], "bbbb")
    assert kept.get(keys[0]) == "aaaa"  # now the most recently used
    kept.put(keys[2], "cccc")
    assert [kept.get(key) for key in keys] == ["aaaa", None, "cccc"]
