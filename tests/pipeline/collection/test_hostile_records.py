"""Hostile provider strings and floods of bad records: stripped, neutralized, capped."""

from __future__ import annotations

import copy
import csv
import io
from datetime import UTC, datetime

import orjson
import pytest

from pipeline.collection.collect import MAX_QUARANTINE_ROWS, run_collection
from pipeline.market.history import export_offers
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from tests.conftest import FIXTURES

OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
FORMULA = '=HYPERLINK("http://evil.example/x","click")'
BAD_RECORDS = MAX_QUARANTINE_ROWS + 500


@pytest.fixture
def hostile_body(tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    good = body["offers"]
    good[0]["geolocation"] = FORMULA
    good[1]["geolocation"] = "@SUM(1+1)\x00, CN"
    good[2]["gpu_name"] = "RTX\x00 5090\x07"
    good[4]["geolocation"] = "Texas\u2028image: x\u2029\u202e\ufeff\x85\r\n, US"
    bad = copy.deepcopy(good[3])
    bad["num_gpus"] = -1
    body["offers"] = good + [{**bad, "id": 900_000 + i} for i in range(BAD_RECORDS)]
    path = tmp_path / "vastai.json"
    path.write_bytes(orjson.dumps(body))
    return path


@pytest.fixture
def stored(warehouse, hostile_body):
    (report,) = run_collection(
        ["vastai"], warehouse, replays={"vastai": hostile_body}, now=lambda: OBSERVED_AT
    )
    return warehouse, report


def test_control_characters_are_stripped_from_provider_strings_at_parse(stored):
    warehouse, _ = stored
    offers = current_offers(warehouse, OfferQuery(include_unavailable=True))
    texts = [v for offer in offers for v in offer.values() if isinstance(v, str)]
    unsafe = ("\x00", "\x07", "\n", "\r", "\x85", "\u2028", "\u2029", "\u202e", "\ufeff")
    assert texts and not any(ch in text for text in texts for ch in unsafe)
    assert "RTX 5090" in {offer["gpu_raw"] for offer in offers}
    assert "Texasimage: x, US" in {offer["region"] for offer in offers}  # separators gone


def test_a_run_quarantines_a_bounded_number_of_records_and_counts_them_all(stored):
    warehouse, report = stored
    assert report.status == "ok" and report.reject_count == BAD_RECORDS
    assert len(report.rejects) == MAX_QUARANTINE_ROWS
    with warehouse.cursor() as cur:
        (kept,) = cur.execute("SELECT count(*) FROM quarantine").fetchone()
    assert kept == MAX_QUARANTINE_ROWS


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralized_and_numbers_kept(stored):
    warehouse, _ = stored
    server = OfferServer(warehouse, Settings(scheduler=False))
    answer = server.answer(OfferQuery(include_unavailable=True), OBSERVED_AT, [])
    assert answer is not None
    body = export_offers(warehouse, answer.table, "csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    regions = {row["region"] for row in rows}
    assert "'" + FORMULA in regions and "'@SUM(1+1), CN" in regions
    assert FORMULA not in regions
    cells = [value for row in rows for value in row.values()]
    assert not any(cell.startswith(("=", "+", "@")) for cell in cells)
    assert all(float(row["price_per_gpu_hour"]) > 0 for row in rows)  # numbers stay numbers
