"""`gpuprices index` and `gpuprices market` print what `/index` and `/market` answer."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from pipeline.market.index import IndexQuery, index_series
from pipeline.market.outlook import MarketQuery, market_outlook
from tests.api.rest.routes.test_index import replay, vastai_body
from warehouse import Warehouse

runner = CliRunner()
T0 = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=2)


@pytest.fixture
def index_db(db_path, tmp_path):
    with Warehouse.open(db_path) as warehouse:
        for day, factor in enumerate([1.0, 1.2, 0.9]):
            at = T0 + timedelta(days=day)
            replay(warehouse, tmp_path, "vastai", at, vastai_body(h100=True, factor=factor))
            replay(warehouse, tmp_path, "lambda", at)
    return db_path


def test_index_as_json_is_the_apis_body(index_db):
    result = runner.invoke(
        app,
        [
            "index",
            "--gpu",
            "H100-80GB",
            "--pricing",
            "on_demand",
            "--since",
            T0.date().isoformat(),
            "--format",
            "json",
            "--db",
            str(index_db),
        ],
    )
    assert result.exit_code == 0, result.output
    printed = orjson.loads(result.stdout)
    with Warehouse.open(index_db) as warehouse:
        query = IndexQuery(gpu="H100-80GB", pricing="on_demand", since=T0.date().isoformat())
        expected = index_series(warehouse, query, datetime.now(UTC))
    [series] = printed["series"]
    assert printed["methodology"] == "v1"
    assert [p["value"] for p in series["points"]] == pytest.approx(
        [p["value"] for p in expected["series"][0]["points"]]
    )
    assert [p["providers"] for p in series["points"]] == [2, 2, 2]


def test_index_as_csv_has_one_row_per_point(index_db):
    result = runner.invoke(
        app,
        [
            "index",
            "--gpu",
            "H100-80GB",
            "--interval",
            "1h",
            "--since",
            T0.date().isoformat(),
            "--format",
            "csv",
            "--db",
            str(index_db),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["pricing"] for r in rows} == {"on_demand", "spot"}
    assert len([r for r in rows if r["pricing"] == "on_demand"]) == 3


def test_market_prints_the_history_it_has(index_db):
    result = runner.invoke(
        app, ["market", "--gpu", "H100-80GB", "--format", "json", "--db", str(index_db)]
    )
    assert result.exit_code == 0, result.output
    printed = orjson.loads(result.stdout)
    with Warehouse.open(index_db) as warehouse:
        expected = market_outlook(warehouse, MarketQuery(gpu="H100-80GB"), datetime.now(UTC))
    assert (printed["days"], printed["history_days"]) == (30, 3)
    assert printed["median"] == pytest.approx(expected["median"])
    table = runner.invoke(app, ["market", "--gpu", "H100-80GB", "--db", str(index_db)])
    assert table.exit_code == 0 and "history_days" not in table.stdout
    assert "percentile_now" in table.stdout and "movement" in table.stdout
    assert printed["movement"] == expected["movement"] is not None


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["index"], 1, "needs --gpu"),
        (["index", "--gpu", "H100-80GB", "--interval", "6h"], 2, "6h"),
        (["market", "--gpu", "H100-80GB", "--below", "cheap"], 2, "below"),
        (["market", "--gpu", "H100"], 1, "several GPUs"),
        (["market", "--gpu", "H100-80GB", "--days", "0"], 2, "days"),
    ],
)
def test_bad_index_and_market_options_are_one_line(index_db, args, code, needle):
    result = runner.invoke(app, [*args, "--db", str(index_db)])
    assert result.exit_code == code
    assert needle in result.output
    assert "Traceback" not in result.output
