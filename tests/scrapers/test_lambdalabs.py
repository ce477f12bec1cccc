from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from scrapers import FormFactor, Pricing, ProviderHTTPError, ProviderPayloadError, lambdalabs
from scrapers.base import USER_AGENT, Credentials
from scrapers.errors import MissingCredentialsError
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("lambda_instance_types.json")
INVALID_KEY_BODY = orjson.dumps(
    {
        "error": {
            "code": "global/invalid-api-key",
            "message": "API key was invalid, expired, or deleted.",
            "suggestion": "Check your API key or create a new one, then try again.",
        }
    }
)
KEY = "secret-lambda-key"


def offers_by_id(body: bytes = BODY):
    return {o.offer_id: o for o in lambdalabs.parse(body, OBSERVED_AT).offers}


def edited(edit) -> bytes:
    body = orjson.loads(BODY)
    edit(body["data"])
    return orjson.dumps(body)


def test_the_8x_h100_price_in_cents_is_31_92_dollars_for_the_instance_and_3_99_per_gpu_hour():
    offer = offers_by_id()["gpu_8x_h100_sxm5@us-south-2"]
    assert offer.gpu_count == 8
    assert offer.price_per_hour == pytest.approx(31.92)
    assert offer.price_per_gpu_hour == pytest.approx(3.99)
    assert offer.price_quoted_per == "instance"


def test_every_gpu_type_becomes_offers_and_nothing_in_the_recorded_body_is_rejected():
    result = lambdalabs.parse(BODY, OBSERVED_AT)
    gpu_types = {name for name in orjson.loads(BODY)["data"] if not name.startswith("cpu_")}
    assert {o.offer_id.split("@")[0] for o in result.offers} == gpu_types
    assert result.rejects == []


def test_a_type_with_capacity_is_one_available_offer_per_region():
    offers = [o for o in offers_by_id().values() if o.offer_id.startswith("gpu_8x_a100_80gb_sxm4")]
    assert {(o.offer_id, o.region, o.available) for o in offers} == {
        ("gpu_8x_a100_80gb_sxm4@us-east-1", "us-east-1", True),
        ("gpu_8x_a100_80gb_sxm4@us-midwest-1", "us-midwest-1", True),
    }


def test_a_sold_out_type_is_one_unavailable_offer_without_region():
    offers = [o for o in offers_by_id().values() if o.offer_id.startswith("gpu_1x_h100_pcie")]
    assert [(o.offer_id, o.region, o.available) for o in offers] == [
        ("gpu_1x_h100_pcie", None, False)
    ]
    assert offers[0].price_per_hour == pytest.approx(3.29)


def test_gpu_name_vram_and_form_factor_come_from_the_description():
    offers = offers_by_id()
    sxm = offers["gpu_8x_h100_sxm5@us-south-2"]
    assert (sxm.gpu_raw, sxm.vram_gb, sxm.form_factor) == ("H100 (80 GB SXM5)", 80, FormFactor.SXM)
    pcie = offers["gpu_1x_h100_pcie"]
    assert (pcie.gpu_raw, pcie.form_factor) == ("H100 (80 GB PCIe)", FormFactor.PCIE)
    assert offers["gpu_8x_b200_sxm6"].form_factor == FormFactor.SXM
    gh200 = offers["gpu_1x_gh200@us-east-3"]
    assert (gh200.gpu_raw, gh200.vram_gb, gh200.form_factor) == ("GH200 (96 GB)", 96, None)


def test_the_tesla_prefix_is_dropped_from_the_gpu_name():
    offer = offers_by_id()["gpu_8x_v100_n"]
    assert (offer.gpu_raw, offer.vram_gb, offer.gpu_count) == ("V100 (16 GB)", 16, 8)


def test_every_gpu_name_resolves_in_the_catalog_and_h100_sxm5_is_the_sxm_h100_80gb():
    catalog = get_catalog()
    for offer in offers_by_id().values():
        assert catalog.resolve(offer.gpu_raw, offer.vram_gb).gpu is not None, offer.gpu_raw
    resolution = catalog.resolve("H100 (80 GB SXM5)", 80)
    assert (resolution.gpu, resolution.form_factor) == ("H100-80GB", FormFactor.SXM)


def test_instance_specs_come_from_specs_in_gib():
    offer = offers_by_id()["gpu_8x_h100_sxm5@us-south-2"]
    assert (offer.vcpus, offer.ram_gb, offer.disk_gb) == (208, 1800, 22528)


def test_lambda_has_no_spot_offers():
    assert {o.pricing for o in offers_by_id().values()} == {Pricing.ON_DEMAND}


def test_cpu_only_types_are_skipped_without_a_reject():
    result = lambdalabs.parse(BODY, OBSERVED_AT)
    assert not any(o.offer_id.startswith("cpu_") for o in result.offers)
    assert result.rejects == []


def test_a_gpu_count_of_more_than_one_digit_is_parsed():
    def sixteen(data):
        data["gpu_8x_h100_sxm5"]["instance_type"]["description"] = "16x H100 (80 GB SXM5)"
        data["gpu_8x_h100_sxm5"]["instance_type"]["specs"]["gpus"] = 16

    offer = offers_by_id(edited(sixteen))["gpu_8x_h100_sxm5@us-south-2"]
    assert offer.gpu_count == 16
    assert offer.price_per_gpu_hour == pytest.approx(31.92 / 16)


def test_a_gpu_count_that_disagrees_with_the_description_is_rejected():
    def disagree(data):
        data["gpu_8x_h100_sxm5"]["instance_type"]["specs"]["gpus"] = 4

    result = lambdalabs.parse(edited(disagree), OBSERVED_AT)
    assert [r.record_id for r in result.rejects] == ["gpu_8x_h100_sxm5"]
    assert "disagrees" in result.rejects[0].reason
    assert not any(o.offer_id.startswith("gpu_8x_h100_sxm5") for o in result.offers)


def test_a_malformed_type_is_rejected_with_its_reason_and_the_rest_kept():
    def break_two(data):
        del data["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"]
        data["gpu_1x_gh200"]["instance_type"]["description"] = "GH200 superchip"

    result = lambdalabs.parse(edited(break_two), OBSERVED_AT)
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert set(reasons) == {"gpu_1x_a10", "gpu_1x_gh200"}
    assert "price_cents_per_hour" in reasons["gpu_1x_a10"]
    assert "GH200 superchip" in reasons["gpu_1x_gh200"]
    assert "gpu_8x_h100_sxm5@us-south-2" in {o.offer_id for o in result.offers}


def test_a_zero_price_is_rejected_as_not_positive():
    def free(data):
        data["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"] = 0

    result = lambdalabs.parse(edited(free), OBSERVED_AT)
    assert [r.record_id for r in result.rejects] == ["gpu_1x_a10"]
    assert "positive" in result.rejects[0].reason


def test_an_error_body_is_a_payload_error_naming_its_code():
    with pytest.raises(ProviderPayloadError, match="global/invalid-api-key"):
        lambdalabs.parse(INVALID_KEY_BODY, OBSERVED_AT)


def test_a_body_that_is_not_json_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        lambdalabs.parse(b"<html>502 Bad Gateway</html>", OBSERVED_AT)


def test_a_body_without_data_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="data"):
        lambdalabs.parse(b'{"instance_types": []}', OBSERVED_AT)


def test_fetch_without_credentials_says_the_key_is_not_set():
    with pytest.raises(MissingCredentialsError, match="LAMBDA_API_KEY is not set"):
        lambdalabs.fetch(httpx.Client(), None)


@respx.mock(assert_all_mocked=True)
def test_fetch_gets_the_types_with_a_bearer_key_and_user_agent(respx_mock, client_factory):
    route = respx_mock.get(lambdalabs.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert lambdalabs.fetch(client, Credentials(KEY)) == BODY
    request = route.calls.last.request
    assert request.method == "GET"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["User-Agent"] == USER_AGENT
    assert KEY not in str(request.url)


@respx.mock(assert_all_mocked=True)
def test_fetch_401_with_the_documented_body_says_to_check_the_key(respx_mock, client_factory):
    respx_mock.get(lambdalabs.URL).mock(return_value=httpx.Response(401, content=INVALID_KEY_BODY))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as info:
        lambdalabs.fetch(client, Credentials(KEY))
    assert "HTTP 401" in str(info.value)
    assert "LAMBDA_API_KEY" in str(info.value)
    assert "global/invalid-api-key" in str(info.value)
    assert KEY not in str(info.value)


@respx.mock(assert_all_mocked=True)
def test_fetch_waits_as_long_as_retry_after_says_on_429_then_succeeds(respx_mock, client_factory):
    respx_mock.get(lambdalabs.URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "3"}),
            httpx.Response(200, content=BODY),
        ]
    )
    with client_factory() as client:
        assert lambdalabs.fetch(client, Credentials(KEY)) == BODY
    assert client_factory.waits == [3.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_backs_off_on_429_without_retry_after_then_succeeds(respx_mock, client_factory):
    respx_mock.get(lambdalabs.URL).mock(
        side_effect=[httpx.Response(429), httpx.Response(200, content=BODY)]
    )
    with client_factory() as client:
        assert lambdalabs.fetch(client, Credentials(KEY)) == BODY
    assert client_factory.waits == [2.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_retries_a_500_then_succeeds(respx_mock, client_factory):
    route = respx_mock.get(lambdalabs.URL).mock(
        side_effect=[httpx.Response(500), httpx.Response(200, content=BODY)]
    )
    with client_factory() as client:
        assert lambdalabs.fetch(client, Credentials(KEY)) == BODY
    assert route.call_count == 2


@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_timing_out_is_an_http_error(respx_mock, client_factory):
    respx_mock.get(lambdalabs.URL).mock(side_effect=httpx.ReadTimeout)
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="timed out"):
        lambdalabs.fetch(client, Credentials(KEY))


@respx.mock(assert_all_mocked=True)
def test_a_truncated_body_is_fetched_but_fails_to_parse(respx_mock, client_factory):
    truncated = BODY[: len(BODY) // 2]
    respx_mock.get(lambdalabs.URL).mock(return_value=httpx.Response(200, content=truncated))
    with client_factory() as client:
        payload = lambdalabs.fetch(client, Credentials(KEY))
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        lambdalabs.parse(payload, OBSERVED_AT)


def stored_lambda_offers(warehouse) -> int:
    with warehouse.cursor() as cur:
        row = cur.execute(
            "SELECT count(*) FROM offer_observations WHERE provider = 'lambda'"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_run_without_a_key_fails_saying_the_key_is_not_set_and_stores_nothing(
    warehouse, client_factory
):
    [report] = run_collection(["lambda"], warehouse, client_factory=client_factory, env={})
    assert report.status == "failed"
    assert report.error is not None and "LAMBDA_API_KEY is not set" in report.error
    assert stored_lambda_offers(warehouse) == 0


@respx.mock(assert_all_mocked=True)
def test_a_successful_run_stores_the_offers(respx_mock, warehouse, client_factory):
    respx_mock.get(lambdalabs.URL).mock(return_value=httpx.Response(200, content=BODY))
    [report] = run_collection(
        ["lambda"], warehouse, client_factory=client_factory, env={"LAMBDA_API_KEY": KEY}
    )
    assert (report.status, report.error) == ("ok", None)
    assert report.offer_count == len(lambdalabs.parse(BODY, OBSERVED_AT).offers)
    assert stored_lambda_offers(warehouse) == report.offer_count
    with warehouse.cursor() as cur:
        gpu, form_factor, per_gpu = cur.execute(
            "SELECT gpu, form_factor, price_per_gpu_hour FROM offer_observations "
            "WHERE offer_id = 'gpu_8x_h100_sxm5@us-south-2'"
        ).fetchone()
    assert (gpu, form_factor) == ("H100-80GB", "SXM")
    assert per_gpu == pytest.approx(3.99)


@respx.mock(assert_all_mocked=True)
def test_a_run_that_gets_401_fails_and_stores_no_offers(respx_mock, warehouse, client_factory):
    respx_mock.get(lambdalabs.URL).mock(return_value=httpx.Response(401, content=INVALID_KEY_BODY))
    [report] = run_collection(
        ["lambda"], warehouse, client_factory=client_factory, env={"LAMBDA_API_KEY": KEY}
    )
    assert report.status == "failed"
    assert report.error is not None and "LAMBDA_API_KEY" in report.error
    assert stored_lambda_offers(warehouse) == 0
