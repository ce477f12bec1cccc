"""Voltage Park's bare-metal locations (a real recording: voltagepark_locations.json)."""

from __future__ import annotations

import orjson
import pytest

from scrapers import Pricing, ProviderPayloadError, voltagepark
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("voltagepark_locations.json")
ANSWER = orjson.loads(BODY)
[ROW] = ANSWER["results"]


def parsed(*rows, **page):
    return voltagepark.parse(orjson.dumps({**ANSWER, "results": list(rows), **page}), OBSERVED_AT)


def test_each_network_of_a_location_is_an_on_demand_node_priced_per_gpu_from_a_string():
    result = voltagepark.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    offers = {o.tier: o for o in result.offers}
    assert set(offers) == {"ethernet", "infiniband"}
    eth = offers["ethernet"]
    assert (eth.gpu_raw, eth.gpu_count, eth.price_quoted_per, eth.pricing) == (
        "h100-sxm5-80gb", 8, "gpu", Pricing.ON_DEMAND
    )  # fmt: skip
    assert (eth.price_per_gpu_hour, eth.price_per_hour) == (1.99, pytest.approx(15.92))
    assert offers["infiniband"].price_per_gpu_hour == 2.49
    assert (eth.vcpus, eth.ram_gb, eth.disk_gb, eth.region) == (104, 1024, 18000, None)


def test_available_only_where_a_whole_node_of_gpus_is_free():
    assert {o.available for o in voltagepark.parse(BODY, OBSERVED_AT).offers} == {False}
    offers = {o.tier: o for o in parsed({**ROW, "gpu_count_ethernet": 16,
                                         "gpu_count_infiniband": 4}).offers}  # fmt: skip
    assert (offers["ethernet"].available, offers["infiniband"].available) == (True, False)


def test_a_price_sent_as_a_number_is_read_too():
    [eth, _] = parsed({**ROW, "gpu_price_ethernet": 1.99}).offers
    assert eth.price_per_gpu_hour == 1.99


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"gpu_price_ethernet": "$1.99"}, "gpu_price_ethernet is not a number"),
     ({"gpu_price_ethernet": None}, "gpu_price_ethernet is null"),
     ({"gpu_price_spot": "0.99"}, "unknown price field(s) ['gpu_price_spot']"),
     ({"gpu_count_ethernet": "8"}, "gpu_count_ethernet is not a count"),
     ({"specs_per_node": {**ROW["specs_per_node"], "gpu_model": ""}}, "gpu_model is not a GPU")],
)  # fmt: skip
def test_a_malformed_location_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    other = {**ROW, "id": "other"}
    result = parsed({**ROW, **change}, other, total_result_count=2)
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id == ROW["id"]
    assert {o.offer_id for o in result.offers} == {"other-ethernet", "other-infiniband"}


@pytest.mark.parametrize("page", [{"has_next": True}, {"total_result_count": 2}])
def test_a_page_that_says_more_locations_exist_is_a_payload_error_not_fewer_offers(page):
    with pytest.raises(ProviderPayloadError, match="more locations"):
        parsed(ROW, **page)
