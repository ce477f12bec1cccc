"""Prime Intellect's GPU availability (built in the documented shape:
tests/fixtures/primeintellect_availability_gpus.json)."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.collection.collect import run_collection
from scrapers import FormFactor, ProviderHTTPError, ProviderPayloadError, primeintellect
from scrapers.base import Credentials
from scrapers.errors import MissingCredentialsError
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("primeintellect_availability_gpus.json")
ITEMS = orjson.loads(BODY)["items"]
EMPTY = b'{"items": [], "totalCount": 0}'
KEY = "secret-prime-key"
ENV = {"PRIME_API_KEY": KEY}
PAGES = respx.patterns.M(url__startswith=primeintellect.URL)


def by_id(items=ITEMS):
    body = orjson.dumps({"items": items, "totalCount": len(items)})
    return {o.offer_id: o for o in primeintellect.parse(body, OBSERVED_AT).offers}


def test_every_recorded_offer_is_parsed_without_rejects():
    result = primeintellect.parse(BODY, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == len(ITEMS) == 8


def test_the_price_is_the_whole_offers_and_memory_is_divided_by_the_gpu_count():
    box = by_id()["primecompute:rtx_pro_6000b_2x:secure_cloud@us-east-1"]
    assert (box.price_quoted_per, box.price_per_hour, box.price_per_gpu_hour) == ("instance", 2.7,
                                                                                 1.35)  # fmt: skip
    assert (box.gpu_count, box.vram_gb) == (2, 96)
    eight = by_id()["lambdalabs:gpu_8x_h100_sxm5:secure_cloud@united_states"]
    assert (eight.vram_gb, eight.price_per_gpu_hour) == (80, pytest.approx(2.49))


def test_the_cloud_behind_each_offer_is_its_seller_in_our_provider_names():
    offers = by_id()
    assert offers["lambdalabs:gpu_1x_h100_sxm5:secure_cloud@united_states"].seller == "lambda"
    assert offers["datacrunch:1H100.80S.30V:secure_cloud@FIN-01"].seller == "verda"
    assert offers["primecompute:rtx_pro_6000b_2x:secure_cloud@us-east-1"].seller == "primecompute"
    assert {o.provider for o in offers.values()} == {"primeintellect"}


def test_stock_status_is_the_availability_and_an_unknown_level_is_rejected():
    offers = by_id()
    assert offers["lambdalabs:gpu_8x_h100_sxm5:secure_cloud@united_states"].available  # Low
    assert not offers["lambdalabs:gpu_1x_a10:secure_cloud@united_states"].available
    result = primeintellect.parse(
        orjson.dumps({"items": [dict(ITEMS[0], stockStatus="Soon")], "totalCount": 1}),
        OBSERVED_AT,
    )
    assert [r.reason for r in result.rejects] == ["stockStatus 'Soon' is not a known stock level"]


def test_gpu_name_and_form_factor_join_type_and_socket_and_the_place_prefers_the_data_center():
    offers = by_id()
    sxm = offers["lambdalabs:gpu_1x_h100_sxm5:secure_cloud@united_states"]
    assert (sxm.gpu_raw, sxm.form_factor, sxm.region) == ("H100 80GB SXM5", FormFactor.SXM,
                                                          "united_states")  # fmt: skip
    pcie = offers["hyperstack:n3-H100x1:secure_cloud@montreal-canada-2"]
    assert (pcie.gpu_raw, pcie.form_factor, pcie.region) == ("H100 80GB PCIe", FormFactor.PCIE,
                                                             "montreal-canada-2")  # fmt: skip
    assert offers["runpod:NVIDIA H100 80GB HBM3:community_cloud@united_states"].tier == (
        "community_cloud"
    )


def test_an_offer_without_a_price_is_rejected_naming_the_field():
    [reject] = primeintellect.parse(
        orjson.dumps({"items": [dict(ITEMS[0], prices={"isVariable": False})]}), OBSERVED_AT
    ).rejects
    assert reject.reason == "missing field 'onDemand'"


def test_an_empty_200_is_a_payload_error_never_an_empty_snapshot():
    with pytest.raises(ProviderPayloadError, match="lists no offers"):
        primeintellect.parse(EMPTY, OBSERVED_AT)


def test_fetch_without_credentials_says_the_key_is_not_set():
    with pytest.raises(MissingCredentialsError, match="PRIME_API_KEY is not set"):
        primeintellect.fetch(httpx.Client(), None)


@respx.mock(assert_all_mocked=True)
def test_fetch_sends_a_bearer_key_and_reads_every_page(respx_mock, client_factory):
    first = {"items": ITEMS[:1] * primeintellect.PAGE_SIZE, "totalCount": 103}
    second = {"items": ITEMS[:3], "totalCount": 103}
    route = respx_mock.route(PAGES).mock(
        side_effect=[httpx.Response(200, json=first), httpx.Response(200, json=second)]
    )
    with client_factory() as client:
        body = orjson.loads(primeintellect.fetch(client, Credentials(KEY)))
    assert (len(body["items"]), body["totalCount"]) == (103, 103)
    assert [c.request.url.params["page"] for c in route.calls] == ["1", "2"]
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {KEY}"


@respx.mock(assert_all_mocked=True)
def test_fetch_401_says_to_check_the_key_without_showing_it(respx_mock, client_factory):
    respx_mock.route(PAGES).mock(return_value=httpx.Response(401, json={"detail": "invalid"}))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as info:
        primeintellect.fetch(client, Credentials(KEY))
    assert "HTTP 401" in str(info.value) and "PRIME_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


@respx.mock(assert_all_mocked=True)
def test_fetch_waits_as_long_as_retry_after_says_on_429(respx_mock, client_factory):
    respx_mock.route(PAGES).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "4"}),
            httpx.Response(200, content=BODY),
        ]  # fmt: skip
    )
    with client_factory() as client:
        assert orjson.loads(primeintellect.fetch(client, Credentials(KEY)))["items"] == ITEMS
    assert client_factory.waits == [4.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_getting_5xx_is_an_http_error(respx_mock, client_factory):
    route = respx_mock.route(PAGES).mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        primeintellect.fetch(client, Credentials(KEY))
    assert route.call_count > 1


def stored(warehouse) -> list[tuple[str, str]]:
    with warehouse.cursor() as cur:
        return cur.execute(
            "SELECT offer_id, seller FROM current_offers WHERE provider = 'primeintellect' "
            "ORDER BY offer_id"
        ).fetchall()


@respx.mock(assert_all_mocked=True)
def test_an_empty_200_fails_the_run_and_the_stored_snapshot_survives(
    respx_mock, warehouse, client_factory
):
    respx_mock.route(PAGES).mock(
        side_effect=[httpx.Response(200, content=BODY), httpx.Response(200, content=EMPTY)]
    )
    [ok] = run_collection(["primeintellect"], warehouse, client_factory=client_factory, env=ENV)
    before = stored(warehouse)
    assert ok.status == "ok" and len(before) == 8
    assert ("lambdalabs:gpu_1x_h100_sxm5:secure_cloud@united_states", "lambda") in before
    [empty] = run_collection(["primeintellect"], warehouse, client_factory=client_factory, env=ENV)
    assert empty.status == "failed" and "lists no offers" in (empty.error or "")
    assert KEY not in (empty.error or "")
    assert stored(warehouse) == before
