"""`gpuprices warehouse copy`: an embedded file onto a lake and back, nothing changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app
from pipeline.settings import Settings
from tests.lake.test_backend import T0, collect_twice
from warehouse import Warehouse
from warehouse.copy import table_counts

UNTIL = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
"""One fixed end for every history question of this module (not "now", which moves)."""


def api_answers(settings: Settings) -> list[object]:
    as_of = (T0 + timedelta(hours=1)).isoformat()
    until = UNTIL.isoformat()
    with TestClient(create_app(settings)) as client:
        offers = client.get("/offers", params={"as_of": as_of, "include_unavailable": "true"})
        history = client.get(
            "/prices/history",
            params={"gpu": "H100", "since": T0.isoformat(), "until": until, "interval": "1h"},
        )
    assert offers.status_code == history.status_code == 200
    listed = offers.json()
    for provider in listed["providers"]:
        provider.pop("age_seconds")
    return [listed, history.json()]


def copy(source: str, target: str, data_path: Path | str) -> None:
    result = CliRunner().invoke(
        app,
        ["warehouse", "copy", "--from", source, "--to", target,
         "--from-data-path", str(data_path), "--to-data-path", str(data_path)],
    )
    assert result.exit_code == 0, result.output


def test_a_file_copied_onto_a_lake_and_back_answers_the_same(each_lake, tmp_path: Path):
    """Onto a lake with its data in a directory, or in a bucket (`--to-data-path s3://...`)."""
    lake = each_lake
    original = tmp_path / "original.duckdb"
    with Warehouse.open(original) as wh:
        collect_twice(wh)
        counts = table_counts(wh)
    assert counts["offer_observations"] > 0 and counts["price_summaries"] > 0
    expected = api_answers(Settings(db=original, scheduler=False))

    copy(f"duckdb://{original}", lake.url, lake.data_path)
    on_lake = Settings(
        warehouse=lake.url, lake_data_path=str(lake.data_path), scheduler=False
    )
    with Warehouse.open(on_lake.warehouse_target) as wh:
        assert table_counts(wh) == counts
    assert api_answers(on_lake) == expected

    back = tmp_path / "back.duckdb"
    copy(lake.url, f"duckdb://{back}", lake.data_path)
    with Warehouse.open(back) as wh:
        assert table_counts(wh) == counts
    assert api_answers(Settings(db=back, scheduler=False)) == expected


def test_copying_into_a_warehouse_that_has_data_is_refused(tmp_path: Path, lake):
    source = tmp_path / "a.duckdb"
    with Warehouse.open(source) as wh:
        collect_twice(wh)
    copy(f"duckdb://{source}", lake.url, lake.data_path)
    result = CliRunner().invoke(
        app,
        ["warehouse", "copy", "--from", f"duckdb://{source}", "--to", lake.url,
         "--to-data-path", str(lake.data_path)],
    )
    assert result.exit_code == 1
    assert "already holds data" in result.output
