from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.collect import run_collection
from scrapers import FormFactor, Pricing, ProviderHTTPError, ProviderPayloadError, runpod
from scrapers.base import USER_AGENT, Credentials
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("runpod_gpu_types.json")
REST_BODY = fixture_bytes("runpod_catalog_v2.json")
GRAPHQL_ERRORS = b'{"errors": [{"message": "Something went wrong"}], "data": null}'


def offers_by_key(body: bytes = BODY):
    result = runpod.parse(body, OBSERVED_AT)
    assert result.rejects == []
    return {(o.offer_id, o.pricing): o for o in result.offers}


def edited(body: bytes, edit) -> bytes:
    data = orjson.loads(body)
    edit(data)
    return orjson.dumps(data)


def gpu_types(data):
    return {record["id"]: record for record in data["data"]["gpuTypes"]}


# parse: the recorded GraphQL body


def test_secure_price_is_per_gpu_and_a_one_gpu_offer_costs_exactly_that():
    offer = offers_by_key()[("NVIDIA H100 80GB HBM3:secure", Pricing.ON_DEMAND)]
    assert offer.gpu_count == 1
    assert offer.price_per_hour == pytest.approx(2.69)
    assert offer.price_per_gpu_hour == pytest.approx(2.69)
    assert offer.price_quoted_per == "gpu"
    assert offer.tier == "secure"


def test_community_cloud_gets_its_own_offer_with_its_own_price():
    offer = offers_by_key()[("NVIDIA A100 80GB PCIe:community", Pricing.ON_DEMAND)]
    assert offer.price_per_gpu_hour == pytest.approx(1.59)
    assert offer.tier == "community"


def test_offers_are_keyed_on_the_gpu_id_and_the_placeholder_row_is_skipped():
    records = orjson.loads(BODY)["data"]["gpuTypes"]
    offers = offers_by_key()
    real_ids = {r["id"] for r in records} - {"unknown"}
    assert {o.gpu_raw for o in offers.values()} == real_ids
    assert all(o.offer_id.split(":")[0] == o.gpu_raw for o in offers.values())


def test_a_price_of_zero_or_null_means_not_offered_in_that_cloud_not_a_reject():
    offers = offers_by_key()
    assert ("NVIDIA GeForce RTX 3070:secure", Pricing.ON_DEMAND) not in offers  # null
    assert ("NVIDIA GeForce RTX 3070:community", Pricing.ON_DEMAND) in offers
    assert ("NVIDIA H200 NVL:community", Pricing.ON_DEMAND) not in offers  # 0
    assert ("NVIDIA H200 NVL:secure", Pricing.ON_DEMAND) in offers


def test_spot_offer_exists_only_where_the_cloud_has_a_spot_price():
    offers = offers_by_key()
    spot = offers[("NVIDIA A100 80GB PCIe:community", Pricing.SPOT)]
    assert spot.price_per_gpu_hour == pytest.approx(0.89)
    assert ("NVIDIA A100 80GB PCIe:secure", Pricing.SPOT) not in offers
    assert not any(pricing is Pricing.SPOT for (gpu, pricing) in offers if "H200" in gpu)


def test_absent_spot_fields_are_normal_and_give_no_spot_offers():
    def drop_spot(data):
        for record in data["data"]["gpuTypes"]:
            del record["secureSpotPrice"], record["communitySpotPrice"]

    offers = offers_by_key(edited(BODY, drop_spot))
    assert offers
    assert all(pricing is Pricing.ON_DEMAND for _, pricing in offers)


def test_stock_status_decides_availability_and_none_or_null_means_unavailable():
    def set_status(data):
        types = gpu_types(data)
        types["NVIDIA H100 80GB HBM3"]["lowestPrice"]["stockStatus"] = "None"
        types["NVIDIA RTX A6000"]["lowestPrice"] = None

    offers = offers_by_key(edited(BODY, set_status))
    assert offers[("NVIDIA GeForce RTX 4090:community", Pricing.ON_DEMAND)].available  # High
    assert offers[("NVIDIA A100 80GB PCIe:secure", Pricing.ON_DEMAND)].available  # Medium
    assert offers[("NVIDIA H200 NVL:secure", Pricing.ON_DEMAND)].available  # Low
    assert not offers[("NVIDIA B200:secure", Pricing.ON_DEMAND)].available  # null
    assert not offers[("NVIDIA H100 80GB HBM3:secure", Pricing.SPOT)].available  # "None"
    assert not offers[("NVIDIA RTX A6000:community", Pricing.ON_DEMAND)].available  # no lowestPrice


def test_vram_comes_from_memory_in_gb_and_region_is_left_empty():
    offer = offers_by_key()[("NVIDIA H200 NVL:secure", Pricing.ON_DEMAND)]
    assert offer.vram_gb == 143
    assert offer.region is None
    assert offer.gpu is None  # resolved later, in the pipeline


@pytest.mark.parametrize(
    ("gpu_raw", "gpu", "form_factor"),
    [
        ("NVIDIA H100 80GB HBM3", "H100-80GB", FormFactor.SXM),
        ("NVIDIA A100 80GB PCIe", "A100-80GB", FormFactor.PCIE),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB", FormFactor.SXM),
        ("NVIDIA H200 NVL", "H200-141GB", FormFactor.NVL),
        ("NVIDIA B200", "B200", FormFactor.SXM),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", None),
        ("NVIDIA RTX A6000", "RTX A6000", None),
        ("AMD Instinct MI300X OAM", "MI300X", None),
        ("NVIDIA GeForce RTX 3070", None, None),  # not in the catalog: kept, listed as unknown
    ],
)
def test_recorded_gpu_ids_resolve_to_canonical_gpus(gpu_raw, gpu, form_factor):
    offer = next(o for o in offers_by_key().values() if o.gpu_raw == gpu_raw)
    resolution = get_catalog().resolve(offer.gpu_raw, offer.vram_gb)
    assert (resolution.gpu, resolution.form_factor) == (gpu, form_factor)


def test_rest_v2_catalog_gives_the_same_on_demand_offers_as_graphql_and_no_spot():
    graphql = {k: o for k, o in offers_by_key(BODY).items() if k[1] is Pricing.ON_DEMAND}
    rest = offers_by_key(REST_BODY)
    assert all(pricing is Pricing.ON_DEMAND for _, pricing in rest)
    assert {k: o.model_dump() for k, o in rest.items()} == {
        k: o.model_dump() for k, o in graphql.items()
    }


@pytest.mark.parametrize(
    ("body", "records"),
    [(BODY, lambda data: data["data"]["gpuTypes"]), (REST_BODY, lambda data: data["gpus"])],
    ids=["graphql", "rest"],
)
def test_a_bad_record_is_rejected_with_its_reason_and_the_rest_kept(body, records):
    def spoil(data):
        rows = records(data)
        del rows[0]["id"]
        price_of = rows[1].get("price") or rows[1]
        price_of["securePrice" if "securePrice" in price_of else "secure"] = "1.74"

    result = runpod.parse(edited(body, spoil), OBSERVED_AT)
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert set(reasons) == {None, "NVIDIA A100-SXM4-80GB"}
    assert "'id'" in reasons[None]
    assert "not a number" in reasons["NVIDIA A100-SXM4-80GB"]
    kept = {o.gpu_raw for o in result.offers}
    assert "NVIDIA H100 80GB HBM3" in kept and "NVIDIA A100-SXM4-80GB" not in kept


def test_a_graphql_error_answer_without_data_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="Something went wrong"):
        runpod.parse(GRAPHQL_ERRORS, OBSERVED_AT)


def test_a_body_that_is_not_json_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        runpod.parse(b"<html>oops", OBSERVED_AT)


def test_a_truncated_body_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        runpod.parse(BODY[: len(BODY) // 2], OBSERVED_AT)


@pytest.mark.parametrize("body", [b'{"gpuTypes": []}', b"[]", b'{"data": {"pods": []}}'])
def test_a_body_of_neither_known_shape_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="gpuTypes"):
        runpod.parse(body, OBSERVED_AT)


# fetch: respx


@respx.mock(assert_all_mocked=True)
def test_fetch_without_key_posts_the_graphql_query_anonymously(respx_mock, client_factory):
    route = respx_mock.post(runpod.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert runpod.fetch(client, None) == BODY
    request = route.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert "Authorization" not in request.headers
    sent = orjson.loads(request.content)
    assert sent["query"] == runpod.QUERY and "gpuTypes" in sent["query"]
    assert sent["variables"] == {"lowestPriceInput": {"gpuCount": 1}}


@respx.mock(assert_all_mocked=True)
def test_fetch_with_key_gets_the_rest_v2_catalog_with_a_bearer_header(respx_mock, client_factory):
    route = respx_mock.get(runpod.REST_URL).mock(
        return_value=httpx.Response(200, content=REST_BODY)
    )
    with client_factory() as client:
        assert runpod.fetch(client, Credentials("secret-key")) == REST_BODY
    request = route.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["Authorization"] == "Bearer secret-key"
    assert request.url.params["include"] == "AVAILABILITY"
    assert "secret-key" not in str(request.url)


@pytest.mark.parametrize("creds", [None, Credentials("bad-key")], ids=["graphql", "rest"])
@respx.mock(assert_all_mocked=True)
def test_fetch_401_is_an_http_error_that_names_the_key(respx_mock, client_factory, creds):
    respx_mock.route(url__startswith="https://api.runpod.io/").mock(
        return_value=httpx.Response(401, json={"title": "Unauthorized", "status": 401})
    )
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="RUNPOD_API_KEY"):
        runpod.fetch(client, creds)


@pytest.mark.parametrize(
    ("first", "waits"),
    [
        (httpx.Response(429, headers={"Retry-After": "7"}), [7.0]),
        (httpx.Response(429), [2.0]),
        (httpx.Response(500), [2.0]),
    ],
    ids=["429-retry-after", "429-no-retry-after", "500"],
)
@respx.mock(assert_all_mocked=True)
def test_fetch_retries_429_and_5xx_then_succeeds(respx_mock, client_factory, first, waits):
    respx_mock.post(runpod.URL).mock(side_effect=[first, httpx.Response(200, content=BODY)])
    with client_factory() as client:
        assert runpod.fetch(client, None) == BODY
    assert client_factory.waits == waits


@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_timing_out_is_an_http_error(respx_mock, client_factory):
    respx_mock.post(runpod.URL).mock(side_effect=httpx.ConnectTimeout)
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="timed out"):
        runpod.fetch(client, None)


# run_collection: status and what is stored


def stored_offers(warehouse) -> int:
    with warehouse.cursor() as cur:
        row = cur.execute(
            "SELECT count(*) FROM offer_observations WHERE provider = 'runpod'"
        ).fetchone()
    return row[0]


def stored_run(warehouse) -> tuple[str, str | None]:
    with warehouse.cursor() as cur:
        return cur.execute(
            "SELECT status, error FROM collection_runs WHERE provider = 'runpod'"
        ).fetchone()


@pytest.mark.parametrize(
    ("env", "method", "url", "body"),
    [({}, "POST", runpod.URL, BODY), ({"RUNPOD_API_KEY": "k"}, "GET", runpod.REST_URL, REST_BODY)],
    ids=["graphql", "rest"],
)
@respx.mock(assert_all_mocked=True)
def test_a_successful_run_stores_every_offer_with_canonical_gpus(
    respx_mock, client_factory, warehouse, env, method, url, body
):
    respx_mock.route(method=method, url__startswith=url).mock(
        return_value=httpx.Response(200, content=body)
    )
    [report] = run_collection(["runpod"], warehouse, client_factory=client_factory, env=env)
    assert (report.status, report.reject_count) == ("ok", 0)
    parsed = runpod.parse(body, OBSERVED_AT)
    assert stored_offers(warehouse) == report.offer_count == len(parsed.offers)
    with warehouse.cursor() as cur:
        gpu, form_factor = cur.execute(
            "SELECT gpu, form_factor FROM offer_observations WHERE gpu_raw = ?",
            ["NVIDIA H100 80GB HBM3"],
        ).fetchone()
    assert (gpu, form_factor) == ("H100-80GB", "SXM")


def test_a_replayed_rest_body_goes_through_the_graphql_fetch_and_parses(warehouse):
    path = FIXTURES / "runpod_catalog_v2.json"
    [report] = run_collection(["runpod"], warehouse, replays={"runpod": path}, env={})
    assert report.status == "ok"
    assert stored_offers(warehouse) == report.offer_count > 0


@pytest.mark.parametrize(
    ("env", "answer", "error"),
    [
        ({"RUNPOD_API_KEY": "bad"}, httpx.Response(401), "RUNPOD_API_KEY"),
        ({}, httpx.Response(429, headers={"Retry-After": "7"}), "HTTP 429"),
        ({}, httpx.Response(500), "HTTP 500"),
        ({}, httpx.ConnectTimeout("slow"), "timed out"),
        ({}, httpx.Response(200, content=BODY[:100]), "not JSON"),
        ({}, httpx.Response(200, content=GRAPHQL_ERRORS), "Something went wrong"),
    ],
    ids=["401", "429", "500", "timeout", "truncated", "graphql-errors"],
)
@respx.mock(assert_all_mocked=True)
def test_a_failed_run_is_recorded_with_its_error_and_stores_no_offers(
    respx_mock, client_factory, warehouse, env, answer, error
):
    route = respx_mock.route(url__startswith="https://api.runpod.io/")
    if isinstance(answer, Exception):
        route.mock(side_effect=answer)
    else:
        route.mock(return_value=answer)
    [report] = run_collection(["runpod"], warehouse, client_factory=client_factory, env=env)
    assert report.status == "failed"
    assert error in (report.error or "")
    status, stored_error = stored_run(warehouse)
    assert status == "failed" and error in stored_error
    assert stored_offers(warehouse) == 0
