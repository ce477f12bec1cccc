"""Daytona's GPU rate card (gpuhunt's test answer: tests/fixtures/daytona_gpu_pricing.json)."""

from __future__ import annotations

import orjson
import pytest

from scrapers import PROVIDERS, Pricing, ProviderPayloadError, daytona
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("daytona_gpu_pricing.json")
ANSWER = orjson.loads(BODY)


def parsed(**change):
    return daytona.parse(orjson.dumps({**ANSWER, **change}), OBSERVED_AT)


def by_key(**change):
    return {(o.offer_id, o.pricing): o for o in parsed(**change).offers}


def test_each_gpu_type_is_a_node_of_1_2_4_and_8_gpus_on_demand_and_spot_listed_only():
    result = daytona.parse(BODY, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 8 * 4 * 2
    assert {o.gpu_count for o in result.offers} == {1, 2, 4, 8}
    assert PROVIDERS["daytona"].listed_only
    assert {(o.region, o.available) for o in result.offers} == {(None, True)}


def test_a_nodes_price_is_its_gpus_vcpus_memory_and_disk_at_the_rates_of_its_pricing():
    offers = by_key()
    # 3.95 + 8 vCPU x 0.0504 + 100 GiB x 0.0162 + 256 GiB disk x 0.000108 (gpuhunt's figure)
    h100 = offers[("1x-H100", Pricing.ON_DEMAND)]
    assert (h100.price_quoted_per, h100.price_per_hour) == ("instance", 6.000848)
    assert (h100.vcpus, h100.ram_gb, h100.disk_gb, h100.tier) == (8, 100, 256, "sandbox")
    # spot discounts the resources too: 2.27 + 8 x 0.03 + 100 x 0.0093 + 256 x 0.000062
    assert offers[("1x-H100", Pricing.SPOT)].price_per_hour == 3.455872
    eight = offers[("8x-H100", Pricing.ON_DEMAND)]
    assert (eight.price_per_hour, eight.price_per_gpu_hour) == (48.006784, pytest.approx(6.000848))
    assert (eight.vcpus, eight.ram_gb, eight.disk_gb) == (64, 800, 2048)


def test_consumer_cards_carry_half_the_memory_per_gpu():
    rtx = by_key()[("1x-RTX-4090", Pricing.ON_DEMAND)]
    assert (rtx.ram_gb, rtx.price_per_hour) == (50, 2.230848)  # gpuhunt's figure
    mi355x = by_key()[("2x-MI355X", Pricing.SPOT)]
    assert (mi355x.gpu_raw, mi355x.ram_gb) == ("MI355X", 200)


def test_a_gpu_without_a_spot_rate_has_on_demand_nodes_only():
    gpus = [{**ANSWER["gpus"][0], "spotPricePerHour": None}, *ANSWER["gpus"][1:]]
    offers = by_key(gpus=gpus)
    assert ("1x-B300", Pricing.ON_DEMAND) in offers and ("1x-B300", Pricing.SPOT) not in offers


def test_the_cards_currency_is_carried_by_each_offer():
    assert {o.currency for o in parsed(currency="eur").offers} == {"EUR"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"onDemandPricePerHour": None}, "onDemandPricePerHour is null"),
     ({"onDemandPricePerHour": "3.95"}, "onDemandPricePerHour is not a number"),
     ({"spotPricePerHour": -1}, "spotPricePerHour -1: a GPU rate must be positive"),
     ({"type": ""}, "type is not a GPU name")],
)  # fmt: skip
def test_a_malformed_gpu_entry_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    gpus = [{**ANSWER["gpus"][4], **change}, *ANSWER["gpus"][:4], *ANSWER["gpus"][5:]]
    result = parsed(gpus=gpus)
    [reject] = result.rejects
    assert reason in reject.reason
    assert result.offer_count == 7 * 4 * 2


@pytest.mark.parametrize(
    "resources",
    [{}, {"onDemand": ANSWER["resources"]["onDemand"]},
     {**ANSWER["resources"], "spot": {"vcpuPerHour": 0.03, "memoryGiBPerHour": "0.0093",
                                      "diskGiBPerHour": 0.000062}}],
)  # fmt: skip
def test_missing_or_malformed_resource_rates_fail_the_whole_answer(resources):
    with pytest.raises(ProviderPayloadError, match="resources"):
        parsed(resources=resources)
