"""Vast.ai's column path gives exactly what the row path gives, offers and rejects alike."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.catalog import get_catalog
from pipeline.collection.normalize import normalize, offers_to_table
from scrapers import ParseResult, vastai
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("vastai_bundles.json")
RECORDS = orjson.loads(BODY)["offers"]
FIELDS = [
    "id", "num_gpus", "gpu_name", "gpu_ram", "dph_base", "min_bid", "geolocation", "rentable",
    "rented", "cpu_cores", "cpu_cores_effective", "cpu_ram", "disk_space", "verification",
    "reliability2", "reliability",
]  # fmt: skip
MISSING = object()

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),  # what orjson writes
    st.integers(min_value=-3, max_value=10),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1, max_value=2000),
    st.sampled_from(["", "verified", "A100 SXM4", "RTX 4090", "free", "2", "Texas, US"]),
    st.just(MISSING),
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    records = []
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        record = dict(draw(st.sampled_from(RECORDS)))
        for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
            value = draw(values)
            if value is MISSING:
                record.pop(field, None)
            else:
                record[field] = value
        kind = draw(st.integers(min_value=0, max_value=9))
        if kind == 0:
            record = draw(st.sampled_from([None, 3, "x", [1]]))  # not an object at all
        elif kind == 1:
            record["id"] = RECORDS[0]["id"]  # a duplicate id
        records.append(record)
    return orjson.dumps({"offers": records})


def row_path(body: bytes, observed_at: datetime = OBSERVED_AT) -> ParseResult:
    return vastai._parse_rows(body, observed_at)


def assert_same(columns: ParseResult, rows: ParseResult) -> None:
    assert columns.offer_count == rows.offer_count
    assert columns.rejects == rows.rejects
    assert offers_to_table(columns).equals(offers_to_table(rows))
    assert columns.offers == rows.offers


def test_the_recorded_body_takes_the_column_path_and_matches_the_row_path():
    result = vastai.parse(BODY, OBSERVED_AT)
    assert result.table is not None
    assert_same(result, row_path(BODY))


def test_a_bad_record_goes_the_row_path_with_its_reason_and_raw_record():
    body = orjson.loads(BODY)
    body["offers"][2]["dph_base"] = -1  # well typed, breaks an invariant
    body["offers"][4]["num_gpus"] = "two"  # badly typed
    payload = orjson.dumps(body)
    result = vastai.parse(payload, OBSERVED_AT)
    assert [r.record_id for r in result.rejects] == [
        str(body["offers"][2]["id"]),
        str(body["offers"][4]["id"]),
    ]
    assert orjson.loads(result.rejects[0].raw) == body["offers"][2]
    assert_same(result, row_path(payload))


def test_normalized_columns_match_normalized_rows():
    body = orjson.loads(BODY)
    body["offers"][3]["min_bid"] = 99.0  # spot above on-demand
    body["offers"].append(dict(body["offers"][0]))  # a duplicate id
    payload = orjson.dumps(body)
    catalog = get_catalog()
    columns = normalize(vastai.parse(payload, OBSERVED_AT), catalog)
    rows = normalize(row_path(payload), catalog)
    assert columns.table is not None
    assert [r.reason.split()[0] for r in columns.rejects] == ["duplicate", "duplicate", "spot"]
    assert_same(columns, rows)


def test_an_observed_at_in_another_zone_is_stored_in_utc():
    observed = OBSERVED_AT.astimezone(timezone(timedelta(hours=2)))
    assert_same(vastai.parse(BODY, observed), row_path(BODY, observed))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies())
def test_any_body_parses_the_same_on_both_paths(body: bytes):
    columns, rows = vastai.parse(body, OBSERVED_AT), row_path(body)
    assert_same(columns, rows)
    catalog = get_catalog()
    assert_same(normalize(columns, catalog), normalize(rows, catalog))
