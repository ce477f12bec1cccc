"""Google Cloud: the Catalog API's SKUs composed into machine types per region and pricing."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.location import get_locator
from scrapers import PROVIDERS, credentials_from_env, gcp
from scrapers.base import USER_AGENT, Credentials
from scrapers.errors import MissingCredentialsError, ProviderHTTPError, ProviderPayloadError
from scrapers.models import FormFactor, Pricing
from tests.conftest import FIXTURES, OBSERVED_AT

KEY = "gcp-test-key-not-real"
PAGES = FIXTURES / "gcp_skus"
FIRST = (PAGES / "skus-1.json").read_bytes()
SECOND = (PAGES / "skus-2.json").read_bytes()


def recorded_payload() -> bytes:
    transport = httpx.MockTransport(gcp.replay_directory(PAGES))
    with httpx.Client(transport=transport) as client:
        return gcp.fetch(client, Credentials(KEY))


@pytest.fixture(scope="module")
def result():
    return gcp.parse(recorded_payload(), OBSERVED_AT)


@pytest.fixture(scope="module")
def offers(result):
    return {(o.offer_id, o.pricing): o for o in result.offers}


def composed(gpu_usd: float, gpus: int, core_usd: float, vcpus: int, ram_usd: float, gib: int):
    return gpu_usd * gpus + core_usd * vcpus + ram_usd * gib


def test_a3_highgpu_1g_on_demand_is_its_h100_plus_26_vcpus_and_234_gib_in_us_central1(offers):
    offer = offers[("a3-highgpu-1g@us-central1", Pricing.ON_DEMAND)]
    assert offer.price_per_hour == pytest.approx(
        composed(9.796550569, 1, 0.025498003, 26, 0.00222034, 234)
    )
    assert round(offer.price_per_hour, 5) == 10.97906  # as a public cost note adds it up
    assert (offer.gpu_raw, offer.form_factor, offer.gpu_count) == ("H100 80GB", "SXM", 1)
    assert (offer.vcpus, offer.ram_gb, offer.price_quoted_per) == (26, 234, "instance")


def test_a3_highgpu_8g_spot_uses_the_spot_gpu_vcpu_and_memory_skus(offers):
    offer = offers[("a3-highgpu-8g@us-central1", Pricing.SPOT)]
    assert offer.price_per_hour == pytest.approx(composed(4.8534, 8, 0.01263, 208, 0.0011, 1872))
    assert offer.price_per_gpu_hour == pytest.approx(offer.price_per_hour / 8)


def test_a100_80gb_and_h100_are_priced_on_demand_and_spot_in_each_region_they_list(offers):
    for machine in ("a2-ultragpu-8g", "a3-highgpu-8g"):
        for region in ("us-central1", "us-east1", "us-west1", "europe-west4"):
            for pricing in (Pricing.ON_DEMAND, Pricing.SPOT):
                assert (f"{machine}@{region}", pricing) in offers
    assert ("a3-highgpu-8g@europe-west3", Pricing.ON_DEMAND) in offers
    assert ("a3-highgpu-8g@europe-west3", Pricing.SPOT) not in offers  # no spot SKU recorded


def test_the_netherlands_a2_ultra_adds_its_gpus_to_the_european_a2_parts(offers):
    offer = offers[("a2-ultragpu-8g@europe-west4", Pricing.ON_DEMAND)]
    assert offer.price_per_hour == pytest.approx(
        composed(4.325205479, 8, 0.034804, 96, 0.004665, 1360)
    )
    assert (offer.gpu_raw, offer.vram_gb, offer.form_factor) == ("A100 80GB", 80, "SXM")


def test_committed_use_reserved_and_dws_rows_are_never_offers(result, offers):
    commitments = {2.7248, 6.79880857, 3.09659, 0.252018107, 0.22}
    per_gpu_prices = {round(o.price_per_gpu_hour, 8) for o in result.offers}
    assert not per_gpu_prices & commitments
    assert all(o.pricing in (Pricing.ON_DEMAND, Pricing.SPOT) for o in result.offers)
    t4 = offers[("t4@us-central1", Pricing.ON_DEMAND)]
    assert (t4.price_per_gpu_hour, t4.tier) == (0.35, "gpu-only")  # not the DWS twin
    assert {r.record_id for r in result.rejects} == {"455B-5067-C961"}


def test_gpus_attached_to_a_vm_of_ones_choice_are_priced_alone(offers):
    spot = offers[("t4@us-west1", Pricing.SPOT)]
    assert (spot.gpu_count, spot.price_per_gpu_hour, spot.vcpus) == (1, 0.1654, None)
    assert offers[("v100-16gb@us-east1", Pricing.ON_DEMAND)].form_factor == FormFactor.SXM


def test_a_region_without_a_family_part_prices_no_machine_of_that_family(offers):
    assert ("g2-standard-4@us-central1", Pricing.ON_DEMAND) in offers  # G2 parts in Iowa only
    assert ("g2-standard-4@us-east1", Pricing.ON_DEMAND) not in offers


def test_a_gpu_sku_no_machine_type_can_be_priced_for_is_a_reject_naming_the_missing_part(result):
    (reject,) = result.rejects
    assert "a3-ultragpu-8g" in reject.reason and "A3Ultra Instance Core" in reject.reason


def test_every_gpu_in_the_recording_resolves_and_every_region_is_placed(result):
    catalog, locator = get_catalog(), get_locator()
    for row in (row for rows in gcp.machine_types().values() for row in rows):
        assert catalog.resolve(row.gpu_raw, row.vram_gb).gpu is not None, row.gpu_raw
    resolved = {catalog.resolve(o.gpu_raw, o.vram_gb).gpu for o in result.offers}
    assert {"A100-80GB", "A100-40GB", "H100-80GB", "L4", "T4"} <= resolved
    for region in gcp.regions():
        assert locator.locate("gcp", region).country == gcp.regions()[region]["country"]
    assert locator.locate("gcp", "europe-west4").eea is True
    assert locator.locate("gcp", "europe-west3").eea is True
    assert locator.locate("gcp", "us-central1").eea is False


def test_one_recorded_page_replays_as_a_file():
    result = gcp.parse(FIRST, OBSERVED_AT)
    assert {(o.offer_id, o.pricing) for o in result.offers} >= {
        ("t4@us-central1", Pricing.ON_DEMAND),
        ("p4@us-west1", Pricing.ON_DEMAND),
    }


@pytest.mark.parametrize("body", [b"", b'{"skus": [', b"<html>quota</html>", b'{"error": {}}'])
def test_a_body_that_is_no_sku_page_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="skus"):
        gcp.parse(body, OBSERVED_AT)


def test_without_the_key_a_live_run_says_gcp_api_key_is_not_set():
    with pytest.raises(MissingCredentialsError, match="GCP_API_KEY is not set"):
        credentials_from_env(PROVIDERS["gcp"], {})
    with pytest.raises(MissingCredentialsError, match="GCP_API_KEY is not set"):
        gcp.fetch(httpx.Client(), None)


@respx.mock(assert_all_mocked=True)
def test_fetch_follows_next_page_token_with_the_key_in_a_header(respx_mock, client_factory):
    route = respx_mock.get(url__startswith=gcp.URL).mock(
        side_effect=[httpx.Response(200, content=FIRST), httpx.Response(200, content=SECOND)]
    )
    with client_factory() as client:
        body = orjson.loads(gcp.fetch(client, Credentials(KEY)))
    first, second = (call.request for call in route.calls)
    assert "pageToken" not in first.url.params and second.url.params["pageToken"] == "2"
    assert first.url.params["currencyCode"] == "USD"
    assert first.headers["X-goog-api-key"] == KEY and KEY not in str(first.url)
    assert first.headers["User-Agent"] == USER_AGENT
    assert len(body["skus"]) == len(orjson.loads(FIRST)["skus"]) + len(orjson.loads(SECOND)["skus"])


@respx.mock(assert_all_mocked=True)
def test_fetch_retries_429_and_5xx_then_succeeds(respx_mock, client_factory):
    respx_mock.get(url__startswith=gcp.URL).mock(side_effect=[
        httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(503),
        httpx.Response(200, content=SECOND)])  # fmt: skip
    factory = client_factory
    with factory() as client:
        assert orjson.loads(gcp.fetch(client, Credentials(KEY)))["skus"]
    assert factory.waits[0] == 2


@respx.mock(assert_all_mocked=True)
def test_fetch_403_says_to_check_the_key_without_printing_it(respx_mock, client_factory):
    respx_mock.get(url__startswith=gcp.URL).mock(return_value=httpx.Response(403))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as info:
        gcp.fetch(client, Credentials(KEY))
    assert "HTTP 403" in str(info.value) and "GCP_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


@respx.mock(assert_all_mocked=True)
def test_a_truncated_second_page_fails_the_fetch(respx_mock, client_factory):
    respx_mock.get(url__startswith=gcp.URL).mock(side_effect=[
        httpx.Response(200, content=FIRST), httpx.Response(200, content=SECOND[:500])])  # fmt: skip
    with client_factory() as client, pytest.raises(ProviderPayloadError, match="page 2"):
        gcp.fetch(client, Credentials(KEY))


@respx.mock(assert_all_mocked=True)
def test_a_server_error_that_persists_fails_the_fetch(respx_mock, client_factory):
    respx_mock.get(url__startswith=gcp.URL).mock(return_value=httpx.Response(500))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 500"):
        gcp.fetch(client, Credentials(KEY))
