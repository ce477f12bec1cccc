"""Shadeform's instance types (real blobs: tests/fixtures/shadeform_instance_types.json)."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.collection.collect import run_collection
from scrapers import FormFactor, Pricing, ProviderHTTPError, ProviderPayloadError, shadeform
from scrapers.base import USER_AGENT, Credentials
from scrapers.errors import MissingCredentialsError
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("shadeform_instance_types.json")
TYPES = orjson.loads(BODY)["instance_types"]
KEY = "secret-shadeform-key"


def by_id(types=TYPES):
    return {o.offer_id: o for o in shadeform.parse(orjson.dumps({"instance_types": types}),
                                                   OBSERVED_AT).offers}  # fmt: skip


def test_the_recording_gives_one_offer_per_type_and_region_and_skips_cpu_types():
    result = shadeform.parse(BODY, OBSERVED_AT)
    gpu_types = [t for t in TYPES if t["configuration"]["num_gpus"]]
    assert result.rejects == []
    assert result.offer_count == sum(len(t["availability"]) for t in gpu_types) == 35
    assert not any("cpu_small" in o.offer_id for o in result.offers)
    assert {o.pricing for o in result.offers} == {Pricing.ON_DEMAND}


def test_the_price_is_the_whole_instances_cents_and_the_per_gpu_price_is_derived():
    offer = by_id()["lambdalabs:A100_sxm4_80Gx8@chicago-usa-2"]
    assert (offer.price_quoted_per, offer.price_per_hour, offer.gpu_count) == ("instance", 22.32, 8)
    assert offer.price_per_gpu_hour == pytest.approx(2.79)


def test_the_cloud_behind_each_offer_is_its_seller_in_our_provider_names():
    offers = by_id()
    assert offers["lambdalabs:A100_sxm4_80Gx8@dulles-usa-1"].seller == "lambda"
    assert offers["hyperstack:H100@montreal-canada-2"].seller == "hyperstack"
    assert offers["massedcompute:H100_nvlx8_NVLINK@desmoines-usa-1"].seller == "massedcompute"
    assert {o.provider for o in offers.values()} == {"shadeform"}
    renamed = by_id([dict(TYPES[0], cloud="DataCrunch")])
    assert {o.seller for o in renamed.values()} == {"verda"}


def test_availability_is_per_region_as_stated():
    offers = by_id()
    assert offers["scaleway:L4@paris-france-5"].available
    assert not offers["scaleway:L4@paris-france-1"].available
    assert offers["scaleway:L4@warsaw-poland-1"].available
    no_regions = by_id([dict(TYPES[2], availability=[])])
    assert [(o.offer_id, o.region, o.available) for o in no_regions.values()] == [
        ("scaleway:L4", None, False)
    ]


def test_gpu_name_form_factor_and_memory_come_from_the_configuration():
    offers = by_id()
    sxm = offers["hyperstack:H100_sxm5x8@montreal-canada-2"]
    assert (sxm.gpu_raw, sxm.form_factor, sxm.vram_gb) == ("H100 SXM5", FormFactor.SXM, 80)
    pcie = offers["hyperstack:H100@montreal-canada-2"]
    assert (pcie.gpu_raw, pcie.form_factor) == ("H100", FormFactor.PCIE)
    nvl = offers["massedcompute:H100_nvlx8_NVLINK@desmoines-usa-1"]
    assert (nvl.gpu_raw, nvl.form_factor, nvl.vram_gb) == ("H100 nvl", FormFactor.NVL, 94)
    a100 = offers["lambdalabs:A100_sxm4_80Gx8@chicago-usa-2"]
    assert (a100.gpu_raw, a100.vcpus, a100.ram_gb, a100.disk_gb) == ("A100 80G SXM4", 240, 1800,
                                                                      20480)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"hourly_price": None}, "hourly_price is not a number"),
     ({"hourly_price": 0}, "price must be positive"),
     ({"cloud": ""}, "the seller is not a non-empty string"),
     ({"availability": "montreal"}, "availability is not a list of regions")],
)  # fmt: skip
def test_a_malformed_type_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    result = shadeform.parse(
        orjson.dumps({"instance_types": [dict(TYPES[6], **change), *TYPES[7:]]}), OBSERVED_AT
    )
    [reject] = {r.reason: r for r in result.rejects}.values()
    assert reason in reject.reason and reject.record_id.endswith(":H100")
    assert result.offer_count > 0


def test_a_body_without_instance_types_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="instance_types"):
        shadeform.parse(b'{"error": "unauthorized"}', OBSERVED_AT)


def test_fetch_without_credentials_says_the_key_is_not_set():
    with pytest.raises(MissingCredentialsError, match="SHADEFORM_API_KEY is not set"):
        shadeform.fetch(httpx.Client(), None)


@respx.mock(assert_all_mocked=True)
def test_fetch_sends_the_key_in_x_api_key_and_lists_unavailable_types_too(
    respx_mock, client_factory
):
    route = respx_mock.get(shadeform.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert shadeform.fetch(client, Credentials(KEY)) == BODY
    request = route.calls.last.request
    assert request.headers["X-API-KEY"] == KEY
    assert request.headers["User-Agent"] == USER_AGENT
    assert "available" not in request.url.params and KEY not in str(request.url)


@respx.mock(assert_all_mocked=True)
def test_fetch_401_says_to_check_the_key_without_showing_it(respx_mock, client_factory):
    respx_mock.get(shadeform.URL).mock(return_value=httpx.Response(401, json={"error": "no"}))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as info:
        shadeform.fetch(client, Credentials(KEY))
    assert "HTTP 401" in str(info.value) and "SHADEFORM_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


@respx.mock(assert_all_mocked=True)
def test_fetch_waits_as_long_as_retry_after_says_on_429(respx_mock, client_factory):
    respx_mock.get(shadeform.URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "5"}),
            httpx.Response(200, content=BODY),
        ]  # fmt: skip
    )
    with client_factory() as client:
        assert shadeform.fetch(client, Credentials(KEY)) == BODY
    assert client_factory.waits == [5.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_getting_5xx_is_an_http_error(respx_mock, client_factory):
    route = respx_mock.get(shadeform.URL).mock(return_value=httpx.Response(503))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 503"):
        shadeform.fetch(client, Credentials(KEY))
    assert route.call_count > 1


@respx.mock(assert_all_mocked=True)
def test_an_empty_200_is_a_failed_run_that_stores_nothing(respx_mock, warehouse, client_factory):
    respx_mock.get(shadeform.URL).mock(return_value=httpx.Response(200, content=b""))
    env = {"SHADEFORM_API_KEY": KEY}
    [report] = run_collection(["shadeform"], warehouse, client_factory=client_factory, env=env)
    assert report.status == "failed" and "instance_types" in (report.error or "")
    assert KEY not in (report.error or "")


@respx.mock(assert_all_mocked=True)
def test_a_run_stores_the_sellers_and_resolves_the_gpus(respx_mock, warehouse, client_factory):
    respx_mock.get(shadeform.URL).mock(return_value=httpx.Response(200, content=BODY))
    env = {"SHADEFORM_API_KEY": KEY}
    [report] = run_collection(["shadeform"], warehouse, client_factory=client_factory, env=env)
    assert (report.status, report.offer_count) == ("ok", 35)
    with warehouse.cursor() as cur:
        row = cur.execute(
            "SELECT seller, gpu, form_factor, country FROM offer_observations "
            "WHERE offer_id = 'lambdalabs:A100_sxm4_80Gx8@dulles-usa-1'"
        ).fetchone()
    assert row == ("lambda", "A100-80GB", "SXM", "US")
