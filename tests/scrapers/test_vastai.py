from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from scrapers import Pricing, ProviderHTTPError, ProviderPayloadError, vastai
from scrapers.base import USER_AGENT, Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("vastai_bundles.json")


def offers_by_key():
    result = vastai.parse(BODY, OBSERVED_AT)
    return {(o.offer_id, o.pricing): o for o in result.offers}


def test_every_record_of_the_recorded_body_becomes_an_on_demand_offer():
    records = orjson.loads(BODY)["offers"]
    offers = offers_by_key()
    assert {offer_id for offer_id, pricing in offers if pricing == Pricing.ON_DEMAND} == {
        str(r["id"]) for r in records
    }


def test_on_demand_price_is_dph_base_for_the_whole_offer_divided_per_gpu():
    offer = offers_by_key()[("24581137", Pricing.ON_DEMAND)]
    assert offer.gpu_count == 8
    assert offer.price_per_hour == pytest.approx(15.4667)
    assert offer.price_per_gpu_hour == pytest.approx(15.4667 / 8)
    assert offer.price_quoted_per == "instance"


def test_spot_offer_uses_min_bid_for_whole_machine():
    offer = offers_by_key()[("23977120", Pricing.SPOT)]
    assert offer.price_per_hour == pytest.approx(0.95)
    assert offer.price_per_gpu_hour == pytest.approx(0.475)


def test_no_spot_offer_when_min_bid_is_null():
    assert ("19841102", Pricing.SPOT) not in offers_by_key()


def test_vram_is_converted_from_mib_to_whole_gb_and_raw_name_is_kept():
    offer = offers_by_key()[("11684738", Pricing.ON_DEMAND)]
    assert offer.gpu_raw == "RTX 4090"
    assert offer.vram_gb == 24  # 24564 MiB as the driver reports a 24 GB card
    assert offer.gpu is None  # resolved later, in the pipeline


def test_ram_is_the_offers_own_cpu_ram_in_gb_not_scaled_again_by_the_core_share():
    body = orjson.loads(BODY)
    record = body["offers"][0]
    record.update(num_gpus=2, cpu_ram=128961, cpu_cores=224, cpu_cores_effective=56.0)
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    offer = next(o for o in result.offers if o.offer_id == str(record["id"]))
    assert offer.ram_gb == pytest.approx(128961 / 1024)  # ~126 GB, not a quarter of it


def test_null_cpu_ram_leaves_ram_unknown_instead_of_guessing():
    body = orjson.loads(BODY)
    body["offers"][0]["cpu_ram"] = None
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert next(o for o in result.offers if o.offer_id == "24581137").ram_gb is None


@pytest.mark.parametrize("above_usd", [0.0000001, 0.004, 0.5], ids=["rounding", "cent", "dearer"])
def test_a_spot_price_above_on_demand_is_kept_as_the_spot_offer_it_is(above_usd):
    body = orjson.loads(BODY)
    record = body["offers"][3]
    record["min_bid"] = record["dph_base"] + above_usd
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    spot = {(o.offer_id, o.pricing): o for o in result.offers}[(str(record["id"]), Pricing.SPOT)]
    assert result.rejects == [] and spot.price_per_hour == pytest.approx(record["min_bid"])


def test_rented_offer_is_listed_but_not_available():
    body = orjson.loads(BODY)
    body["offers"][0]["rented"] = True
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert not next(o for o in result.offers if o.offer_id == "24581137").available


def test_a_malformed_record_is_rejected_with_its_reason_and_the_rest_kept():
    body = orjson.loads(BODY)
    del body["offers"][1]["num_gpus"]
    body["offers"][2]["dph_base"] = -1
    result = vastai.parse(orjson.dumps(body), OBSERVED_AT)
    assert {r.record_id for r in result.rejects} == {"11684738", "21348645"}
    assert "num_gpus" in next(r.reason for r in result.rejects if r.record_id == "11684738")
    assert "positive" in next(r.reason for r in result.rejects if r.record_id == "21348645")
    assert len({o.offer_id for o in result.offers}) == len(body["offers"]) - 2


def test_a_body_that_is_not_json_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        vastai.parse(b"<html>oops", OBSERVED_AT)


def test_a_body_without_offers_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="offers"):
        vastai.parse(b'{"success": false}', OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_fetch_posts_the_search_body_with_user_agent_and_optional_key(respx_mock, client_factory):
    route = respx_mock.post(vastai.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert vastai.fetch(client, Credentials("secret-key")) == BODY
    request = route.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["Authorization"] == "Bearer secret-key"
    sent = orjson.loads(request.content)
    assert sent["rentable"] == {"eq": True} and sent["limit"] == vastai.SEARCH_LIMIT
    assert "secret-key" not in str(request.url)


@respx.mock(assert_all_mocked=True)
def test_fetch_without_key_sends_no_authorization(respx_mock, client_factory):
    route = respx_mock.post(vastai.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        vastai.fetch(client, None)
    assert "Authorization" not in route.calls.last.request.headers


@respx.mock(assert_all_mocked=True)
def test_fetch_retries_429_without_retry_after_then_succeeds(respx_mock, client_factory):
    respx_mock.post(vastai.URL).mock(
        side_effect=[
            httpx.Response(429, text="API requests too frequent"),
            httpx.Response(200, content=BODY),
        ]
    )
    with client_factory() as client:
        assert vastai.fetch(client, None) == BODY
    assert client_factory.waits == [2.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_gives_up_after_repeated_5xx_with_the_status(respx_mock, client_factory):
    respx_mock.post(vastai.URL).mock(return_value=httpx.Response(503))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 503"):
        vastai.fetch(client, None)


def stored_offers(warehouse) -> int:
    with warehouse.cursor() as cur:
        return cur.execute("SELECT count(*) FROM offer_observations").fetchone()[0]


@pytest.mark.parametrize(
    ("responses", "error"),
    [
        ([httpx.Response(401, json={"error": "invalid key"})], "HTTP 401"),
        ([httpx.ConnectTimeout("connect timed out")] * 4, "timed out"),
        ([httpx.Response(200, content=BODY[: len(BODY) // 2])], "not JSON"),
        ([httpx.Response(200, text="<html>maintenance</html>")], "not JSON"),
    ],
    ids=["401", "timeout", "truncated-body", "html-instead-of-json"],
)
@respx.mock(assert_all_mocked=True)
def test_a_failed_run_is_recorded_with_its_error_and_stores_nothing(
    respx_mock, warehouse, client_factory, responses, error
):
    from pipeline.collection.collect import run_collection

    respx_mock.post(vastai.URL).mock(side_effect=responses)
    [report] = run_collection(
        ["vastai"], warehouse, client_factory=client_factory, env={"VASTAI_API_KEY": "k"}
    )
    assert report.status == "failed" and error in (report.error or "")
    assert stored_offers(warehouse) == 0


@pytest.mark.parametrize(
    ("first", "waits"),
    [
        (httpx.Response(429, headers={"Retry-After": "7"}), [7.0]),
        (httpx.Response(429), [2.0]),
        (httpx.Response(500), [2.0]),
    ],
    ids=["429-retry-after", "429", "500"],
)
@respx.mock(assert_all_mocked=True)
def test_a_retried_answer_then_success_stores_the_snapshot(
    respx_mock, warehouse, client_factory, first, waits
):
    from pipeline.collection.collect import run_collection

    respx_mock.post(vastai.URL).mock(side_effect=[first, httpx.Response(200, content=BODY)])
    [report] = run_collection(["vastai"], warehouse, client_factory=client_factory, env={})
    assert report.status == "ok" and client_factory.waits == waits
    assert stored_offers(warehouse) == report.offer_count > 0
