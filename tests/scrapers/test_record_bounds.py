"""Provider records the edge refuses (issue 17): fractional GPU counts and megabyte names."""

from __future__ import annotations

import orjson
import pytest

from scrapers import lambdalabs, vastai
from scrapers.models import MAX_TEXT_CHARS
from tests.conftest import OBSERVED_AT, fixture_bytes

VAST = orjson.loads(fixture_bytes("vastai_bundles.json"))
LAMBDA = orjson.loads(fixture_bytes("lambda_instance_types.json"))


@pytest.mark.parametrize("field", ["gpu_name", "geolocation"])
def test_a_vast_record_with_a_name_longer_than_the_bound_is_a_reject(field):
    body = {"offers": [dict(record) for record in VAST["offers"]]}
    body["offers"][1][field] = "x" * (MAX_TEXT_CHARS + 1)
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert any(f"at most {MAX_TEXT_CHARS}" in r.reason for r in result.rejects)
    assert all(len(r.reason) < 200 for r in result.rejects)  # the value is cut short


def test_a_vast_record_with_2_5_gpus_is_a_reject_not_2_gpus():
    body = {"offers": [dict(record) for record in VAST["offers"]]}
    body["offers"][0]["num_gpus"] = 2.5
    record_id = str(body["offers"][0]["id"])
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert record_id in {r.record_id for r in result.rejects}
    assert record_id not in {o.offer_id for o in result.offers}


def test_a_vast_record_with_a_megabyte_gpu_name_is_a_reject_in_the_column_path_too():
    body = {"offers": [dict(record) for record in VAST["offers"]]}
    body["offers"][0]["gpu_name"] = "H" * 10**6
    record_id = str(body["offers"][0]["id"])
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert record_id in {r.record_id for r in result.rejects}
    assert all(len(o.gpu_raw) <= MAX_TEXT_CHARS for o in result.offers)


def test_a_lambda_instance_with_a_fractional_gpu_count_is_a_reject():
    body = orjson.loads(orjson.dumps(LAMBDA))
    name, entry = next(
        (k, v) for k, v in body["data"].items() if v["instance_type"]["specs"]["gpus"] == 1
    )
    entry["instance_type"]["specs"]["gpus"] = 1.5
    result = lambdalabs.parse(orjson.dumps(body), OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == name and "gpus" in reject.reason
