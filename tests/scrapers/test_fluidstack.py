"""Fluidstack's configurations in stock (tests/fixtures/fluidstack_configurations.json: rebuilt from
SkyPilot's catalog generated from a live answer, see tests/fixtures/README.md). Fetch errors, the
key and the CLI are in test_keyed_endpoints.py."""

from __future__ import annotations

import orjson
import pytest

from pipeline.catalog import get_catalog
from pipeline.location import get_locator
from scrapers import FormFactor, Pricing, ProviderPayloadError, fluidstack
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("fluidstack_configurations.json")
CONFIGURATIONS = orjson.loads(BODY)
A100, H100 = CONFIGURATIONS


def parsed(configurations):
    return fluidstack.parse(orjson.dumps(configurations), OBSERVED_AT)


def by_id(configurations=CONFIGURATIONS):
    return {o.offer_id: o for o in parsed(configurations).offers}


def test_one_offer_per_type_count_and_region_listed():
    result = fluidstack.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    assert result.offer_count == 4 * 3 + 1  # A100: 4 sizes x 3 regions; H100: 8 GPUs in Finland
    assert "H100_NVLINK_80GB::8@FINLAND" in by_id()


def test_the_price_is_per_gpu_so_an_instance_of_8_costs_8_times_it():
    offer = by_id()["A100_PCIE_80GB::8@GERMANY"]
    assert (offer.price_quoted_per, offer.price_per_gpu_hour) == ("gpu", 1.8)
    assert offer.price_per_hour == pytest.approx(14.4)  # SkyPilot's catalog: 14.4 for ::8
    assert {o.pricing for o in by_id().values()} == {Pricing.ON_DEMAND}


def test_what_is_listed_is_in_stock_and_a_configuration_without_region_is_not():
    assert all(o.available for o in by_id().values())
    offers = by_id([dict(A100, regions=[])])
    assert sorted((o.offer_id, o.region, o.available) for o in offers.values()) == [
        ("A100_PCIE_80GB::1", None, False), ("A100_PCIE_80GB::2", None, False),
        ("A100_PCIE_80GB::4", None, False), ("A100_PCIE_80GB::8", None, False),
    ]  # fmt: skip


def test_vcpus_and_ram_are_unknown_rather_than_invented_and_vram_comes_from_the_type():
    offer = by_id()["H100_NVLINK_80GB::8@FINLAND"]
    assert (offer.vcpus, offer.ram_gb, offer.disk_gb, offer.vram_gb) == (None, None, None, 80)


def test_gpu_types_resolve_with_their_form_factor_and_nvlink_is_the_sxm_board():
    catalog = get_catalog()
    pcie = catalog.resolve("A100_PCIE_80GB", 80)
    assert (pcie.gpu, pcie.form_factor) == ("A100-80GB", FormFactor.PCIE)
    nvlink = catalog.resolve("H100_NVLINK_80GB", 80)
    assert (nvlink.gpu, nvlink.form_factor) == ("H100-80GB", FormFactor.SXM)
    for older in ("H100_SXM5_80GB", "H100_PCIE_80GB", "RTX_A6000_48GB", "L40_48GB",
                  "A100_NVLINK_80GB", "Tesla_V100_SXM2_16GB"):  # fmt: skip
        assert catalog.resolve(older, None).gpu is not None, older


def test_regions_are_placed_by_the_place_they_name():
    locator = get_locator()
    expected = {"NORTH_DAKOTA_USA": "US", "ARIZONA_USA": "US", "GERMANY": "DE", "FINLAND": "FI",
                "norway_4_eu": "NO", "generic_1_canada": "CA"}  # fmt: skip
    assert {r: locator.locate("fluidstack", r).country for r in expected} == expected


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"gpu_counts": []}, "gpu_counts is empty"),
     ({"gpu_counts": 8}, "gpu_counts is not a list"),
     ({"gpu_counts": [1.5]}, "gpu_counts is not a whole number"),
     ({"price_per_gpu_hr": "1.8"}, None),
     ({"price_per_gpu_hr": "free"}, "price_per_gpu_hr 'free' is not a decimal number"),
     ({"regions": [""]}, "regions has an entry that is not a name"),
     ({"gpu_type": None}, "gpu_type is not a non-empty string")],
)  # fmt: skip
def test_a_malformed_configuration_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    result = parsed([dict(A100, **change), H100])
    if reason is None:  # a decimal string is read as the number
        assert result.rejects == [] and by_id([dict(A100, **change)])
        return
    [reject] = result.rejects
    assert reason in reject.reason
    assert [o.offer_id for o in result.offers] == ["H100_NVLINK_80GB::8@FINLAND"]


def test_an_error_object_is_a_payload_error_quoting_it():
    with pytest.raises(ProviderPayloadError, match="it says: Invalid api key"):
        fluidstack.parse(b'{"error": "Invalid api key"}', OBSERVED_AT)
