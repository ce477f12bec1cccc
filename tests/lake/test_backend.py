"""The lake backend runs the same migrations and answers the same queries as the embedded file."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from pipeline.collection.collect import run_collection
from pipeline.market.history import HistoryQuery, price_history
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from tests.lake.cluster import REPLAYS
from warehouse import MissingExtraError, Warehouse, WarehouseError
from warehouse.copy import table_counts
from warehouse.db import _migrations

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)


def collect_twice(warehouse: Warehouse) -> None:
    for hours in (0, 2):
        run_collection(
            list(REPLAYS),
            warehouse,
            observed_at=T0 + timedelta(hours=hours),
            replays=REPLAYS,
            env={},
        )


def without_run_ids(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Run ids are random per run; everything else must match."""
    return [{k: v for k, v in row.items() if k != "run_id"} for row in rows]


def answers(warehouse: Warehouse) -> dict[str, object]:
    now = datetime.now(UTC)
    settings = Settings(scheduler=False)
    query = OfferQuery(include_unavailable=True)
    past = OfferQuery(as_of=T0 + timedelta(hours=1), include_unavailable=True)
    server = OfferServer(warehouse, settings)
    return {
        "offers": without_run_ids(server.answer(query, now, []).offers),
        "as_of": without_run_ids(server.answer(past, now, []).offers),
        "history": price_history(warehouse, HistoryQuery(gpu="H100"), now)["series"],
        "counts": table_counts(warehouse),
    }


def test_the_same_collections_give_the_same_answers_on_a_file_and_on_a_lake(each_lake, tmp_path):
    """With its data in a directory, or in a bucket of an S3-compatible server."""
    with Warehouse.open(tmp_path / "file.duckdb") as file:
        collect_twice(file)
        expected = answers(file)
    with Warehouse.open(each_lake.url, data_path=each_lake.data_path) as on_lake:
        assert on_lake.lake is not None
        assert on_lake.schema_version() == max(v for v, _, _ in _migrations())
        collect_twice(on_lake)
        got = answers(on_lake)
    assert got["counts"] == expected["counts"]
    assert got["counts"]["offer_observations"] > 0
    assert got == expected


def test_a_second_process_opening_the_lake_sees_the_migrated_schema_and_the_data(lake):
    with Warehouse.open(lake.url, data_path=lake.data_path) as first:
        run_collection(["vastai"], first, replays={"vastai": REPLAYS["vastai"]}, env={})
        with Warehouse.open(lake.url, data_path=lake.data_path) as second:
            assert second.migrate() == []
            assert table_counts(second) == table_counts(first)


def test_a_lease_is_held_by_one_holder_until_it_expires(lake):
    with Warehouse.open(lake.url, data_path=lake.data_path) as wh:
        ttl = timedelta(seconds=1)
        assert wh.take_lease("collect:vastai", "a", ttl)
        assert not wh.take_lease("collect:vastai", "b", ttl)
        assert wh.take_lease("collect:vastai", "a", ttl)  # renewed
        import time

        time.sleep(1.2)
        assert wh.take_lease("collect:vastai", "b", ttl)
        assert not wh.take_lease("collect:vastai", "a", ttl)
        wh.release_lease("collect:vastai", "b")
        assert wh.take_lease("collect:vastai", "a", ttl)


def test_a_lake_url_without_a_data_path_says_which_setting_to_set(lake):
    with pytest.raises(WarehouseError, match="GPUPRICES_LAKE_DATA_PATH"):
        Warehouse.open(lake.url)


def test_a_missing_extension_package_is_one_line_naming_the_extra(
    lake, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setitem(sys.modules, "duckdb_extension_ducklake", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'gpuprices\[lake\]'"):
        Warehouse.open(lake.url, data_path=lake.data_path)
    monkeypatch.setenv("GPUPRICES_WAREHOUSE", lake.url)
    monkeypatch.setenv("GPUPRICES_LAKE_DATA_PATH", str(lake.data_path))
    result = CliRunner().invoke(app, ["offers"])
    assert result.exit_code == 1
    assert "pip install 'gpuprices[lake]'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_explicit_db_wins_over_the_warehouse_setting(lake, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GPUPRICES_WAREHOUSE", lake.url)
    monkeypatch.setenv("GPUPRICES_LAKE_DATA_PATH", str(lake.data_path))
    assert isinstance(Settings().warehouse_target, object)
    db = tmp_path / "x.duckdb"
    result = CliRunner().invoke(app, ["offers", "--db", str(db), "--format", "json"])
    assert result.exit_code == 1 and f"No database at {db}" in result.output  # read: no create
    Warehouse.open(db).close()
    result = CliRunner().invoke(app, ["offers", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
