"""Crusoe's pricing page (recorded: tests/fixtures/crusoe_pricing.html, its GPU section)."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx
from typer.testing import CliRunner

from scrapers import (
    MissingCredentialsError,
    Pricing,
    ProviderHTTPError,
    ProviderPayloadError,
    crusoe,
)
from scrapers.base import Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes
from tests.scrapers.test_keyed_apis import replayed_offers

runner = CliRunner()

BODY = fixture_bytes("crusoe_pricing.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in crusoe.parse(body, OBSERVED_AT).offers}


def test_the_recorded_page_gives_its_six_on_demand_prices_per_gpu_hour():
    result = crusoe.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    prices = {o.offer_id: o.price_per_gpu_hour for o in result.offers}
    assert prices == {
        "nvidia-h200-hgx": 4.29, "nvidia-h100-hgx": 3.90, "nvidia-a100-sxm": 2.30,
        "nvidia-a100-pcie": 2.00, "nvidia-l40s": 1.50, "amd-mi300x": 3.45,
    }  # fmt: skip
    assert {(o.pricing, o.gpu_count, o.price_quoted_per) for o in result.offers} == {
        (Pricing.ON_DEMAND, 1, "gpu")
    }


def test_contact_sales_rows_give_no_offer_gb200_b200_and_mi355x():
    ids = {oid for oid, _ in offers_by_key()}
    assert not ids & {"nvidia-gb200-nvl72", "nvidia-b200-hgx", "amd-mi355x"}


def test_the_memory_and_form_factor_tags_tell_the_two_a100_rows_apart():
    offers = offers_by_key()
    sxm = offers[("nvidia-a100-sxm", Pricing.ON_DEMAND)]
    pcie = offers[("nvidia-a100-pcie", Pricing.ON_DEMAND)]
    assert (sxm.gpu_raw, sxm.vram_gb) == ("NVIDIA A100 SXM", 80)
    assert (pcie.gpu_raw, pcie.vram_gb) == ("NVIDIA A100 PCIe", 80)
    assert offers[("amd-mi300x", Pricing.ON_DEMAND)].vram_gb == 192


def test_a_spot_price_is_a_spot_offer_apart_from_on_demand():
    priced = BODY.replace(
        b'$3.90/GPU-hr</p></div><div class="pricing-rich w-richtext"><p><a href="/contact-sales">'
        b"Contact sales</a>",
        b'$3.90/GPU-hr</p></div><div class="pricing-rich w-richtext"><p>$1.60/GPU-hr',
    )
    offers = offers_by_key(priced)
    assert offers[("nvidia-h100-hgx", Pricing.SPOT)].price_per_gpu_hour == pytest.approx(1.60)
    assert offers[("nvidia-h100-hgx", Pricing.ON_DEMAND)].price_per_gpu_hour == pytest.approx(3.90)


def test_price_columns_follow_the_header_labels():
    swapped = BODY.replace(b">On-demand<", b">@@<").replace(b">Current spot<", b">On-demand<")
    swapped = swapped.replace(b">@@<", b">Current spot<")
    offers = offers_by_key(swapped)
    assert {pricing for _, pricing in offers} == {Pricing.SPOT}


def test_a_row_with_a_missing_price_cell_is_rejected_and_the_rest_kept():
    body = BODY.replace(b'<div class="pricing-rich w-richtext"><p>$1.50/GPU-hr</p></div>', b"", 1)
    result = crusoe.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "nvidia-l40s"
    assert reject.reason == "row has 2 cells for 3 column labels"
    assert result.offer_count == 5


def test_a_gpu_table_without_price_labels_is_a_changed_layout():
    body = BODY.replace(b">On-demand<", b">Reserved<").replace(b">Current spot<", b">Term<")
    with pytest.raises(ProviderPayloadError, match="no on-demand or spot column"):
        crusoe.parse(body, OBSERVED_AT)


# with the keys: the page's prices on live capacity (tests/fixtures/crusoe_keyed.json)

KEYED = fixture_bytes("crusoe_keyed.json")
SECRET = "c2VjcmV0LWtleS1mb3ItdGhlLWtub3duLWFuc3dlcg"  # "secret-key-for-the-known-answer"
ACCESS = "access-key-id"
TYPES_URL = f"{crusoe.API}/v1alpha5/projects/project-1/compute/vms/types"
CAPACITIES_URL = f"{crusoe.API}/v1alpha5/capacities"


def keyed_offers():
    result = crusoe.parse(KEYED, OBSERVED_AT)
    assert result.rejects == []
    return {(o.offer_id, o.pricing): o for o in result.offers}


def test_the_signature_is_crusoes_documented_hmac_known_answer():
    # computed apart: printf '/v1alpha5/capacities\n\nGET\n2026-12-07T16:00:00+00:00\n' |
    # openssl dgst -sha256 -hmac secret-key-for-the-known-answer -binary | base64 (URL-safe, no =)
    assert (
        crusoe.signature("/v1alpha5/capacities", "", "GET", "2026-12-07T16:00:00+00:00", SECRET)
        == "ofVodS2OG1WaXzT6KnTGll1-lEOwiRwPYl5f_0pX50A"
    )


def test_a_gpu_type_gets_the_pages_per_gpu_price_per_location_with_live_availability():
    offers = keyed_offers()
    h100 = offers[("h100-80gb-sxm-ib.8x@us-east1-a", Pricing.ON_DEMAND)]
    assert (h100.gpu_raw, h100.gpu_count, h100.price_per_gpu_hour) == ("NVIDIA H100 SXM", 8, 3.90)
    assert h100.price_per_hour == pytest.approx(31.20)
    assert (h100.region, h100.available, h100.vcpus, h100.ram_gb) == (
        "us-east1-a", True, 176.0, 1440.0
    )  # fmt: skip
    assert offers[("h100-80gb-sxm-ib.8x@eu-iceland1-a", Pricing.ON_DEMAND)].available is False


def test_the_form_factor_and_memory_pick_the_pages_row_a100_pcie_not_sxm():
    a100 = keyed_offers()[("a100-80gb.1x@us-southcentral1-a", Pricing.ON_DEMAND)]
    assert (a100.gpu_raw, a100.price_per_gpu_hour) == ("NVIDIA A100 PCIe", 2.00)


def test_a_type_without_capacity_anywhere_is_one_unavailable_offer_and_cpu_types_none():
    offers = keyed_offers()
    l40s = offers[("l40s-48gb.1x", Pricing.ON_DEMAND)]
    assert (l40s.region, l40s.available) == (None, False)
    assert not any(key[0].startswith("c1a") for key in offers)


def test_a_gpu_type_the_page_does_not_price_is_a_reject_naming_it():
    data = orjson.loads(KEYED)
    data["types"].append({"product_name": "gb200.4x", "gpu_type": "GB200-NVL-186GB",
                          "num_gpu": 4, "cpu_cores": 144, "memory_gb": 1700})  # fmt: skip
    result = crusoe.parse(orjson.dumps(data), OBSERVED_AT)
    assert [(r.record_id, r.reason) for r in result.rejects] == [
        ("gb200.4x", "gpu_type 'GB200-NVL-186GB' has no price on the page")
    ]


def crusoe_api(request: httpx.Request) -> httpx.Response:
    data = orjson.loads(KEYED)
    if request.url.host == "www.crusoe.ai":
        return httpx.Response(200, text=data["page"])
    items = data["types"] if request.url.path.endswith("/types") else data["capacities"]
    return httpx.Response(200, json={"items": items})


@pytest.fixture
def crusoe_env(monkeypatch):
    monkeypatch.setenv(crusoe.ACCESS_KEY_ENV, ACCESS)
    monkeypatch.setenv(crusoe.PROJECT_ENV, "project-1")


@respx.mock(assert_all_mocked=True)
def test_with_the_keys_fetch_signs_each_api_request_and_joins_page_and_capacity(
    respx_mock, client_factory, crusoe_env
):
    page = respx_mock.get(crusoe.URL).mock(side_effect=crusoe_api)
    api = respx_mock.route(host="api.crusoecloud.com").mock(side_effect=crusoe_api)
    with client_factory() as client:
        body = crusoe.fetch(client, Credentials(SECRET))
    assert crusoe.parse(body, OBSERVED_AT).offers == crusoe.parse(KEYED, OBSERVED_AT).offers
    assert "Authorization" not in page.calls.last.request.headers
    assert [str(c.request.url) for c in api.calls] == [TYPES_URL, CAPACITIES_URL]
    for call in api.calls:
        request = call.request
        stamp = request.headers["X-Crusoe-Timestamp"]
        expected = crusoe.signature(request.url.path, "", "GET", stamp, SECRET)
        assert request.headers["Authorization"] == f"Bearer 1.0:{ACCESS}:{expected}"
        assert SECRET not in str(request.headers) and SECRET not in str(request.url)


@pytest.mark.parametrize("missing", [crusoe.ACCESS_KEY_ENV, crusoe.PROJECT_ENV])
@respx.mock(assert_all_mocked=True)
def test_a_secret_key_without_its_access_key_or_project_names_the_variable(
    missing, respx_mock, client_factory, crusoe_env, monkeypatch
):
    monkeypatch.delenv(missing)
    respx_mock.get(crusoe.URL).mock(side_effect=crusoe_api)
    with client_factory() as client, pytest.raises(MissingCredentialsError, match=missing):
        crusoe.fetch(client, Credentials(SECRET))


@respx.mock(assert_all_mocked=True)
def test_a_refused_signature_names_the_variables_never_the_keys(
    respx_mock, client_factory, crusoe_env
):
    respx_mock.get(crusoe.URL).mock(side_effect=crusoe_api)
    respx_mock.route(host="api.crusoecloud.com").mock(return_value=httpx.Response(401))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as exc:
        crusoe.fetch(client, Credentials(SECRET))
    assert "HTTP 401" in str(exc.value) and crusoe.ENV_KEY in str(exc.value)
    assert SECRET not in str(exc.value) and ACCESS not in str(exc.value)


@pytest.mark.parametrize(
    ("first", "waits"),
    [(httpx.Response(429, headers={"Retry-After": "7"}), [7.0]), (httpx.Response(500), [2.0])],
    ids=["429-retry-after", "500"],
)
@respx.mock(assert_all_mocked=True)
def test_a_busy_or_failing_capacity_api_is_retried(
    first, waits, respx_mock, client_factory, crusoe_env
):
    respx_mock.get(crusoe.URL).mock(side_effect=crusoe_api)
    respx_mock.get(TYPES_URL).mock(side_effect=crusoe_api)
    respx_mock.get(CAPACITIES_URL).mock(side_effect=[first, crusoe_api])
    with client_factory() as client:
        body = crusoe.fetch(client, Credentials(SECRET))
    assert crusoe.parse(body, OBSERVED_AT).offer_count == 5
    assert client_factory.waits == waits


@pytest.mark.parametrize(
    "answer", [httpx.Response(503), httpx.Response(200, content=b"")], ids=["503", "empty-200"]
)
@respx.mock(assert_all_mocked=True)
def test_a_failing_or_empty_capacity_answer_fails_the_run(
    answer, respx_mock, client_factory, crusoe_env
):
    respx_mock.get(crusoe.URL).mock(side_effect=crusoe_api)
    respx_mock.get(TYPES_URL).mock(side_effect=crusoe_api)
    respx_mock.get(CAPACITIES_URL).mock(return_value=answer)
    with client_factory() as client, pytest.raises((ProviderHTTPError, ProviderPayloadError)):
        crusoe.fetch(client, Credentials(SECRET))


def test_with_the_keys_a_replayed_collection_lists_offers_with_availability(
    db_path, crusoe_env, monkeypatch
):
    monkeypatch.setenv(crusoe.ENV_KEY, SECRET)
    offers = {
        o["offer_id"]: o for o in replayed_offers("crusoe", "crusoe_keyed.json", db_path, SECRET)
    }
    assert offers["h100-80gb-sxm-ib.8x@us-east1-a"]["available"] is True
    assert offers["h100-80gb-sxm-ib.8x@us-east1-a"]["country"] == "US"
    assert offers["h100-80gb-sxm-ib.8x@eu-iceland1-a"]["country"] == "IS"
    assert offers["mi300x-192gb.8x@us-southcentral1-a"]["available"] is False
    assert all(o["gpu"] for o in offers.values())
