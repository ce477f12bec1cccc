"""Lium's public node feed (recorded: tests/fixtures/lium_nodes.json; built from recorded
executor rows: lium_nodes_europe.json)."""

from __future__ import annotations

import orjson
import pytest

from scrapers import Pricing, ProviderPayloadError, lium
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("lium_nodes.json")
FEED = orjson.loads(BODY)
H200 = "f092246d-5704-4c9e-b57f-7c0710a06deb"
SPOT = "45af0308-a13c-497f-93ea-ab06144eee29"


def parsed(nodes):
    return lium.parse(orjson.dumps({**FEED, "nodes": nodes}), OBSERVED_AT)


def by_id(nodes=FEED["nodes"]):
    return {o.offer_id: o for o in parsed(nodes).offers}


def test_the_recorded_feed_gives_one_offer_per_whole_node_and_two_for_a_splittable_one():
    result = lium.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    assert sorted((o.offer_id[-2:], o.gpu_count) for o in result.offers) == [
        ("x1", 1), ("x1", 1), ("x5", 5), ("x8", 8), ("x8", 8)
    ]  # fmt: skip


def test_the_price_is_per_gpu_and_the_nodes_price_only_cross_checks_it():
    whole = by_id()["ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1x8"]
    assert (whole.price_quoted_per, whole.price_per_gpu_hour) == ("gpu", 0.5)
    assert whole.price_per_hour == pytest.approx(4.0)  # price_per_node_hour 4.0
    node = dict(FEED["nodes"][0], price_per_node_hour=5.0)
    [reject] = parsed([node]).rejects
    assert "price_per_node_hour 5.0 is not price_per_gpu_hour 0.5 x gpu_count 8" in reject.reason


def test_the_spot_tier_is_spot_pricing_apart_from_the_secure_tier():
    offers = by_id()
    assert offers[f"{SPOT}x1"].pricing == Pricing.SPOT and offers[f"{SPOT}x1"].tier == "spot"
    assert {o.pricing for k, o in offers.items() if not k.startswith(SPOT)} == {Pricing.ON_DEMAND}
    [reject] = parsed([dict(FEED["nodes"][2], tier="community")]).rejects
    assert reject.reason == "unknown tier 'community' (known: secure, spot)"


def test_a_splittable_node_offers_its_smallest_order_and_all_its_free_gpus_with_their_share():
    offers = by_id()
    one, five = offers[f"{H200}x1"], offers[f"{H200}x5"]  # 8 GPUs, 5 free, minimum 1
    assert (one.vcpus, one.ram_gb, one.disk_gb) == (24, 251.88, 446.88)  # 192 / 8, 2015 / 8
    assert (five.vcpus, five.price_per_hour) == (120, pytest.approx(19.95))
    assert one.available and five.available and one.vram_gb == 140  # as stated


def test_a_node_with_fewer_gpus_free_than_its_smallest_order_is_listed_whole_not_available():
    node = dict(FEED["nodes"][0], available_gpu_count=3)  # minimum 8
    [offer] = parsed([node]).offers
    assert (offer.gpu_count, offer.available) == (8, False)


def test_a_missing_minimum_order_means_the_whole_node():
    node = dict(FEED["nodes"][1], min_rentable_gpu_count=None, available_gpu_count=8)
    assert [o.gpu_count for o in parsed([node]).offers] == [8]


def test_the_region_is_the_city_and_country_code_so_the_country_is_read_from_it():
    offers = by_id()
    assert offers["ebdfdbe2-875a-4caa-8eea-1ab5c2a763e1x8"].region == "Chiyoda City, JP"
    node = dict(FEED["nodes"][0], city=None)
    assert parsed([node]).offers[0].region == "JP"
    assert parsed([dict(node, country_code=None)]).offers[0].region is None


def test_the_europe_recording_keeps_unstated_specs_unknown():
    result = lium.parse(fixture_bytes("lium_nodes_europe.json"), OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 4
    assert {(o.vcpus, o.ram_gb, o.vram_gb) for o in result.offers} == {(None, None, None)}


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"gpu_model": ""}, "gpu_model is not a non-empty string"),
     ({"price_per_gpu_hour": "0.5"}, "price_per_gpu_hour is not a number"),
     ({"available_gpu_count": -1}, "available_gpu_count is not a count"),
     ({"price_per_gpu_hour": 0, "price_per_node_hour": 0}, "price must be positive")],
)  # fmt: skip
def test_a_malformed_node_is_rejected_with_its_reason_and_id(change, reason):
    result = parsed([dict(FEED["nodes"][2], **change), FEED["nodes"][0]])
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id == SPOT
    assert result.offer_count == 1


def test_a_body_without_a_nodes_list_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="lium: body has no 'nodes' list"):
        lium.parse(b'{"nodes": {}}', OBSERVED_AT)
