"""The one offer path: `OfferBatch` derives prices, checks invariants and keys, keeps rejects."""

from __future__ import annotations

import math
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapers import OfferBatch, Pricing
from scrapers.models import OFFER_SCHEMA
from tests.conftest import OBSERVED_AT

RECORDS = [{"id": f"r{i}"} for i in range(10)]


def batch() -> OfferBatch:
    return OfferBatch(
        "vastai",
        OBSERVED_AT,
        raw_of=lambda i: f"raw record {i}",
        id_of=lambda i: RECORDS[i]["id"],
    )


def offer(**fields):
    return {
        "offer_id": "1",
        "gpu_raw": "H100 SXM",
        "gpu_count": 1,
        "pricing": Pricing.ON_DEMAND,
        "available": True,
        **fields,
    }


@given(
    price=st.floats(min_value=0.01, max_value=500, allow_nan=False),
    gpus=st.integers(min_value=1, max_value=72),
)
def test_either_quoted_price_gives_both_prices_consistent_to_the_cent(price, gpus):
    b = batch()
    b.add(0, [offer(offer_id="a", gpu_count=gpus, price_per_hour=price)])
    b.add(1, [offer(offer_id="b", gpu_count=gpus, price_per_gpu_hour=price)])
    for row in b.finish().offers:
        assert abs(row.price_per_gpu_hour * row.gpu_count - row.price_per_hour) < 0.005


def test_the_batch_records_which_price_the_provider_quoted():
    b = batch()
    b.add(0, [offer(offer_id="gpu", gpu_count=8, price_per_gpu_hour=2.0)])
    b.add(1, [offer(offer_id="node", gpu_count=8, price_per_hour=16.0)])
    rows = {row.offer_id: row for row in b.finish().offers}
    assert (rows["gpu"].price_quoted_per, rows["gpu"].price_per_hour) == ("gpu", 16.0)
    assert (rows["node"].price_quoted_per, rows["node"].price_per_gpu_hour) == ("instance", 2.0)


def test_the_table_has_the_one_offer_schema_with_provider_and_utc_time_set():
    b = batch()
    b.add(0, [offer(price_per_hour=1.0)])
    result = b.finish()
    assert result.table.schema.equals(OFFER_SCHEMA)
    [row] = result.offers
    assert row.provider == "vastai" and row.observed_at == OBSERVED_AT


def test_an_offer_states_exactly_one_price():
    with pytest.raises(ValueError, match="one of price_per_hour, price_per_gpu_hour"):
        batch().add(0, [offer(price_per_hour=16.0, price_per_gpu_hour=2.0)])


@pytest.mark.parametrize("price", [0.0, -1.0, math.inf, math.nan])
def test_prices_must_be_positive_and_finite(price):
    b = batch()
    b.add(3, [offer(price_per_hour=price)])
    result = b.finish()
    [reject] = result.rejects
    assert result.offer_count == 0
    assert (reject.record_id, reject.raw) == ("r3", "raw record 3")
    assert "positive and finite" in reject.reason


def test_a_naive_observed_at_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        OfferBatch("vastai", datetime(2026, 1, 1), raw_of=str, id_of=str)


def test_vram_in_the_wrong_unit_is_a_reject_with_the_value():
    b = batch()
    b.add(0, [offer(price_per_hour=1.0, vram_gb=81559)])
    [reject] = b.finish().rejects
    assert "vram_gb 81559.0" in reject.reason


def test_a_record_with_one_bad_offer_is_rejected_whole_and_the_others_stay():
    b = batch()
    b.add(0, [offer(offer_id="a", price_per_hour=2.0)])
    b.add(1, [offer(offer_id="b", price_per_hour=2.0),
              offer(offer_id="b", pricing=Pricing.SPOT, price_per_hour=-1.0)])  # fmt: skip
    result = b.finish()
    assert [row.offer_id for row in result.offers] == ["a"]
    assert [r.record_id for r in result.rejects] == ["r1"]


def test_a_repeated_key_is_a_reject_and_the_first_record_stays():
    b = batch()
    b.add(0, [offer(price_per_hour=2.0)])
    b.add(1, [offer(price_per_hour=3.0)])
    result = b.finish()
    assert [row.price_per_hour for row in result.offers] == [2.0]
    [reject] = result.rejects
    assert reject.record_id == "r1" and reject.reason == "duplicate offer_id '1' (on_demand)"


def test_a_field_of_the_wrong_type_adds_nothing_so_the_parser_can_reject_the_record():
    b = batch()
    with pytest.raises(TypeError, match="vcpus is not a number"):
        b.add(0, [offer(price_per_hour=1.0), offer(offer_id="2", price_per_hour=1.0, vcpus="8")])
    b.reject(0, "vcpus is not a number")
    result = b.finish()
    assert result.offer_count == 0 and [r.raw for r in result.rejects] == ["raw record 0"]


def test_a_gpu_count_past_64_bits_adds_nothing_so_the_parser_can_reject_the_record():
    b = batch()  # Vultr's count comes from its VRAM figure: 1e33 GB is a count no table holds
    with pytest.raises(ValueError, match="gpu_count 10+ is past a 64-bit integer"):
        b.add(0, [offer(price_per_hour=1.0, gpu_count=10**31)])
    b.add(1, [offer(offer_id="2", price_per_hour=1.0)])
    assert b.finish().offer_count == 1


def test_rejects_become_a_table_with_the_raw_record_as_served():
    b = batch()
    b.reject(2, "broken")
    table = b.finish().rejects_table(OBSERVED_AT)
    assert table.to_pylist() == [
        {"provider": "vastai", "record_id": "r2", "reason": "broken", "raw": "raw record 2",
         "observed_at": OBSERVED_AT}
    ]  # fmt: skip
