"""`gpuprices offers` searches as `/offers` does: node filters, `--gpu H100:8`, sorts, JSONL."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from api.cli.commands import app

runner = CliRunner()


@pytest.fixture
def market_db(search_market, db_path):
    search_market.close()
    return db_path


def offers(db_path, *args: str) -> list[dict]:
    result = runner.invoke(app, ["offers", *args, "--format", "jsonl", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    "args",
    [("--gpu", "H100:8"), ("--gpu", "H100-80GB:8"), ("--gpu", "H100", "--gpu-count", "8")],
)
def test_gpu_h100_8_lists_only_eight_gpu_offers_of_the_1_2_4_and_8(market_db, args):
    assert {o["gpu_count"] for o in offers(market_db, "--gpu", "H100")} == {1, 2, 4, 8}
    got = offers(market_db, *args)
    assert got and {o["gpu_count"] for o in got} == {8}
    assert {o["gpu"] for o in got} == {"H100-80GB"}


@pytest.mark.parametrize("flag", ["--min-gpu-count", "--min-gpus"])
def test_min_gpu_count_and_its_alerts_spelling_agree(market_db, flag):
    got = offers(market_db, "--gpu", "H100", flag, "2")
    assert {o["gpu_count"] for o in got} == {2, 4, 8}


def test_node_filters_and_a_descending_sort_from_the_command_line(market_db):
    got = offers(
        market_db, "--min-vram-gb", "80", "--min-reliability", "0.99", "--verified",
        "--nvlink", "--max-price-per-hour", "20", "--min-vcpus", "16", "--min-ram-gb", "64",
        "--min-disk-gb", "100", "--min-total-vram-gb", "160", "--sort", "-price_per_hour",
    )  # fmt: skip
    assert got
    for o in got:
        assert o["vram_gb"] >= 80 and o["reliability"] >= 0.99 and o["verified"] and o["nvlink"]
        assert o["price_per_hour"] <= 20 and o["vcpus"] >= 16 and o["ram_gb"] >= 64
        assert o["disk_gb"] >= 100 and o["gpu_count"] * o["vram_gb"] >= 160
    prices = [o["price_per_hour"] for o in got]
    assert prices == sorted(prices, reverse=True)


def test_jsonl_is_one_offer_per_line_with_the_derived_columns(market_db):
    got = offers(market_db, "--gpu", "H100-80GB", "--form-factor", "SXM")
    assert got and all(o["nvlink"] is True and o["price_per_pflop_hour"] > 0 for o in got)


def test_the_csv_carries_price_per_pflop_hour(market_db):
    cheapest = offers(market_db, "--gpu", "H100:8")[0]
    args = ["offers", "--gpu", "H100:8", "--format", "csv", "--db", str(market_db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    first = next(csv.DictReader(io.StringIO(result.stdout)))
    assert float(first["price_per_pflop_hour"]) == cheapest["price_per_pflop_hour"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--sort", "colour"), "sort on one of price_per_gpu_hour"),
        (("--gpu", "H100:x"), "NAME:COUNT"),
        (("--gpu", "H100:8", "--gpu-count", "4"), "says 8 GPUs but gpu_count says 4"),
        (("--min-reliability", "2"), "--min-reliability"),
        (("--gpu-count", "0"), "--gpu-count"),
    ],
)
def test_bad_search_values_are_one_line_and_exit_2(market_db, args, says):
    result = runner.invoke(app, ["offers", *args, "--db", str(market_db)])
    assert result.exit_code == 2
    assert says in result.output
    assert "Traceback" not in result.output


def test_csv_output_neutralizes_formula_cells_and_keeps_numbers():
    from api.cli.common import csv_cell

    assert [csv_cell(v) for v in ("=1+1", "+x", "-x", "@SUM", "\tA", "\rA")] == [
        "'=1+1", "'+x", "'-x", "'@SUM", "'\tA", "'\rA",
    ]  # fmt: skip
    assert [csv_cell(v) for v in ("-1.5", -1.5, "+3", "H100", None)] == [
        "-1.5", -1.5, "+3", "H100", None,
    ]  # fmt: skip
