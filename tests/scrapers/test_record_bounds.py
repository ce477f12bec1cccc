"""Provider records the edge refuses (issue 17): fractional GPU counts and megabyte names."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from scrapers import Pricing, lambdalabs, vastai
from scrapers.models import MAX_TEXT_CHARS, Offer
from tests.conftest import OBSERVED_AT, fixture_bytes

VAST = orjson.loads(fixture_bytes("vastai_bundles.json"))
LAMBDA = orjson.loads(fixture_bytes("lambda_instance_types.json"))
OFFER = {
    "provider": "vastai",
    "offer_id": "1",
    "gpu_raw": "H100 SXM",
    "pricing": Pricing.ON_DEMAND,
    "available": True,
    "observed_at": OBSERVED_AT,
}


def test_an_offer_refuses_a_fractional_gpu_count_instead_of_truncating_it():
    with pytest.raises(ValidationError, match="fractional part"):
        Offer.from_instance_price(price_per_hour=5.0, gpu_count=2.5, **OFFER)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["offer_id", "gpu_raw", "region", "tier"])
def test_an_offer_refuses_a_name_longer_than_the_bound(field):
    with pytest.raises(ValidationError, match=f"at most {MAX_TEXT_CHARS}"):
        Offer.from_instance_price(price_per_hour=5.0, gpu_count=1, **{**OFFER, field: "x" * 10**6})


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
