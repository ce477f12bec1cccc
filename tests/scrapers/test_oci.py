"""Oracle Cloud: GPU shapes from the public price list, per GPU-hour, in each GPU region."""

from __future__ import annotations

import httpx
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.location import get_locator
from scrapers import oci
from scrapers.errors import ProviderHTTPError, ProviderPayloadError
from scrapers.models import Pricing
from tests.conftest import FIXTURES, OBSERVED_AT

BODY = (FIXTURES / "oci_products.json").read_bytes()


@pytest.fixture(scope="module")
def result():
    return oci.parse(BODY, OBSERVED_AT)


@pytest.fixture(scope="module")
def offers(result):
    return {o.offer_id: o for o in result.offers}


def test_bm_gpu_h100_8_is_8_h100_80gb_at_its_per_gpu_hour_price(offers):
    offer = offers["BM.GPU.H100.8@eu-frankfurt-1"]
    assert (offer.gpu_raw, offer.gpu_count, offer.vram_gb, offer.form_factor) == (
        "H100 80GB", 8, 80, "SXM")  # fmt: skip
    assert (offer.price_per_gpu_hour, offer.price_per_hour) == (10, 80)
    assert (offer.price_quoted_per, offer.pricing, offer.currency) == ("gpu", "on_demand", "USD")
    assert get_catalog().resolve(offer.gpu_raw, offer.vram_gb).gpu == "H100-80GB"


def test_every_shape_is_listed_once_in_every_gpu_region_at_the_same_price(result, offers):
    h100 = [o for o in result.offers if o.tier == "BM.GPU.H100.8"]
    assert {o.region for o in h100} == set(oci.REGIONS)
    assert {o.price_per_gpu_hour for o in h100} == {10}
    assert offers["BM.GPU.A100-v2.8@us-ashburn-1"].price_per_gpu_hour == 4
    assert offers["BM.GPU.B200.8@uk-london-1"].price_per_gpu_hour == 14


def test_one_part_prices_every_shape_of_its_gpu(offers):
    assert {offers[f"{s}@ap-tokyo-1"].gpu_count for s in (
        "VM.GPU.A10.1", "VM.GPU.A10.2", "BM.GPU.A10.4")} == {1, 2, 4}  # fmt: skip


def test_licences_cloud_at_customer_and_other_categories_are_not_offers(result):
    assert all(o.pricing == Pricing.ON_DEMAND for o in result.offers)  # no spot in the list
    parts = {o.tier for o in result.offers}
    assert not any("NVIDIA AI Enterprise" in tier for tier in parts)
    prices = {o.price_per_gpu_hour for o in result.offers}
    assert 10.75 not in prices and 0.6 not in prices and 2.9 not in prices  # H100T, C@C


def test_a_gpu_part_missing_from_the_shape_table_is_a_reject_naming_it(result):
    assert {r.record_id for r in result.rejects} == {"B112613", "B89734"}
    assert all("oci_shapes.csv" in r.reason for r in result.rejects)


def test_every_gpu_in_the_recording_resolves_and_eu_regions_are_eea(result):
    catalog, locator = get_catalog(), get_locator()
    for offer in result.offers:
        assert catalog.resolve(offer.gpu_raw, offer.vram_gb).gpu is not None, offer.gpu_raw
    assert locator.locate("oci", "eu-frankfurt-1").eea is True
    assert locator.locate("oci", "eu-amsterdam-1").eea is True
    assert locator.locate("oci", "uk-london-1").eea is False
    for region, row in oci.REGIONS.items():
        assert locator.locate("oci", region).country == row["country"]


@pytest.mark.parametrize("body", [b"", BODY[:400], b"[]", b'{"lastUpdated": "x"}'])
def test_a_truncated_or_foreign_body_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError):
        oci.parse(body, OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_fetch_needs_no_key_and_asks_for_usd(respx_mock, client_factory):
    route = respx_mock.get(oci.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert oci.fetch(client, None) == BODY
    assert route.calls.last.request.url.params["currencyCode"] == "USD"


@respx.mock(assert_all_mocked=True)
def test_fetch_retries_429_then_succeeds_and_fails_on_a_lasting_5xx(respx_mock, client_factory):
    answers = [httpx.Response(429), httpx.Response(200, content=BODY)]
    respx_mock.get(oci.URL).mock(side_effect=answers)
    with client_factory() as client:
        assert oci.fetch(client, None) == BODY
    respx_mock.get(oci.URL).mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        oci.fetch(client, None)
