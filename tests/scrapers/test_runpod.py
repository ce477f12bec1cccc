from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from scrapers import FormFactor, Pricing, ProviderHTTPError, ProviderPayloadError, runpod
from scrapers.base import USER_AGENT, Credentials
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("runpod_gpu_types.json")  # one catalog answer, as older runs recorded it
SWEEP = fixture_bytes("runpod_sweep.json")  # the catalog, then stock per datacenter and country
REST_BODY = fixture_bytes("runpod_catalog_v2.json")
GRAPHQL_ERRORS = b'{"errors": [{"message": "Something went wrong"}], "data": null}'
SECURE_DCS = ["CA-MTL-1", "EU-RO-1", "EU-SE-1", "EU-NL-1", "EUR-IS-1", "US-KS-2", "US-TX-3"]
COUNTRIES = ["CA", "CZ", "FR", "SE", "US"]


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


def located(gpu: str, cloud: str, pricing: Pricing = Pricing.ON_DEMAND, body: bytes = SWEEP):
    """The offers of one GPU, cloud and pricing, by region."""
    return {
        o.region: o
        for (_, p), o in offers_by_key(body).items()
        if o.gpu_raw == gpu and o.tier == cloud and p == pricing
    }


# parse: the recorded GraphQL catalog answer (no locations: the old behaviour)


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


@pytest.mark.parametrize("body", [BODY, SWEEP], ids=["catalog", "sweep"])
def test_offers_are_keyed_on_the_gpu_id_and_the_placeholder_row_is_skipped(body):
    records = orjson.loads(BODY)["data"]["gpuTypes"]
    offers = offers_by_key(body)
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
    assert not any(pricing == Pricing.SPOT for (gpu, pricing) in offers if "H200" in gpu)


def test_absent_spot_fields_are_normal_and_give_no_spot_offers():
    def drop_spot(data):
        for record in data["data"]["gpuTypes"]:
            del record["secureSpotPrice"], record["communitySpotPrice"]

    offers = offers_by_key(edited(BODY, drop_spot))
    assert offers
    assert all(pricing == Pricing.ON_DEMAND for _, pricing in offers)


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


def test_a_plain_catalog_answer_gives_one_unlocated_offer_per_cloud_as_before():
    offers = offers_by_key()
    assert len(offers) == 24
    assert {o.region for o in offers.values()} == {None}
    assert {o.offer_id.count(":") for o in offers.values()} == {1}  # "<id>:<cloud>"
    offer = offers[("NVIDIA H200 NVL:secure", Pricing.ON_DEMAND)]
    assert offer.vram_gb == 143
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
        ("NVIDIA GeForce RTX 3070", "RTX 3070", None),
    ],
)
def test_recorded_gpu_ids_resolve_to_canonical_gpus(gpu_raw, gpu, form_factor):
    offer = next(o for o in offers_by_key().values() if o.gpu_raw == gpu_raw)
    resolution = get_catalog().resolve(offer.gpu_raw, offer.vram_gb)
    assert (resolution.gpu, resolution.form_factor) == (gpu, form_factor)


# parse: a sweep (the catalog, then stock per secure datacenter and community country)


def test_a_sweep_gives_one_secure_offer_per_datacenter_that_has_the_gpu():
    h100 = located("NVIDIA H100 80GB HBM3", "secure")
    assert set(h100) == {"US-TX-3", "EU-RO-1", "EUR-IS-1"}
    for datacenter, offer in h100.items():
        assert offer.offer_id == f"NVIDIA H100 80GB HBM3:secure:{datacenter}"
        assert offer.price_per_gpu_hour == pytest.approx(2.69)  # the list price, everywhere
        assert (offer.available, offer.vram_gb, offer.gpu_count) == (True, 80, 1)


def test_a_sweep_gives_one_community_offer_per_country_that_has_the_gpu():
    rtx4090 = located("NVIDIA GeForce RTX 4090", "community")
    assert set(rtx4090) == {"CZ", "SE", "FR", "US"}
    assert all(o.available and o.price_per_gpu_hour == 0.34 for o in rtx4090.values())
    assert set(located("NVIDIA GeForce RTX 3070", "community")) == {"FR", "CZ"}


def test_a_location_whose_stock_is_none_or_null_gets_no_offer():
    assert set(located("NVIDIA A100-SXM4-80GB", "secure")) == {"CA-MTL-1"}  # EUR-IS-1 "None"
    assert set(located("NVIDIA A100-SXM4-80GB", "community")) == {"CA"}  # CZ "None"
    assert set(located("NVIDIA H200 NVL", "secure")) == {"US-TX-3"}  # EU-NL-1 "None"
    assert set(located("NVIDIA A100 80GB PCIe", "secure")) == {"US-KS-2", "EU-NL-1"}  # null


def test_a_gpu_in_stock_nowhere_keeps_one_unavailable_offer_without_a_region():
    [offer] = located("NVIDIA B200", "secure").values()
    assert (offer.offer_id, offer.region, offer.available) == ("NVIDIA B200:secure", None, False)
    assert offer.price_per_gpu_hour == pytest.approx(5.99)
    assert located("NVIDIA B200", "community") == {}  # not offered in community cloud


def test_spot_offers_follow_the_locations_of_their_cloud():
    spot = located("NVIDIA A100-SXM4-80GB", "secure", Pricing.SPOT)
    assert set(spot) == {"CA-MTL-1"}
    assert spot["CA-MTL-1"].price_per_gpu_hour == pytest.approx(1.09)
    assert located("NVIDIA A100 80GB PCIe", "secure", Pricing.SPOT) == {}  # no secure spot price


def test_every_sweep_offer_is_located_and_ids_are_unique_per_pricing():
    result = runpod.parse(SWEEP, OBSERVED_AT)
    keys = [(o.offer_id, o.pricing) for o in result.offers]
    assert len(keys) == len(set(keys)) == 46
    regions = {o.region for o in result.offers}
    assert regions == set(SECURE_DCS) | set(COUNTRIES) | {None}
    assert [o.offer_id for o in result.offers if o.region is None] == ["NVIDIA B200:secure"]


def test_a_gpu_missing_from_a_location_answer_or_an_entry_without_id_is_not_stocked_there():
    def edit(data):
        answer = data["secure"]["EU-RO-1"]["data"]["gpuTypes"]
        answer[:] = [r for r in answer if r["id"] != "NVIDIA H100 80GB HBM3"]
        for record in data["secure"]["EU-SE-1"]["data"]["gpuTypes"]:
            if record["id"] == "NVIDIA GeForce RTX 4090":
                del record["id"]

    body = edited(SWEEP, edit)
    assert set(located("NVIDIA H100 80GB HBM3", "secure", body=body)) == {"US-TX-3", "EUR-IS-1"}
    assert set(located("NVIDIA GeForce RTX 4090", "secure", body=body)) == {"EU-RO-1"}


def test_a_location_answer_with_graphql_errors_fails_the_whole_sweep():
    def spoil(data):
        data["secure"]["EU-RO-1"] = orjson.loads(GRAPHQL_ERRORS)

    with pytest.raises(ProviderPayloadError, match="Something went wrong.*secure EU-RO-1"):
        runpod.parse(edited(SWEEP, spoil), OBSERVED_AT)


@pytest.mark.parametrize("cloud", ["secure", "community"])
def test_a_sweep_without_its_answers_by_location_is_a_payload_error(cloud):
    def drop(data):
        del data[cloud]

    with pytest.raises(ProviderPayloadError, match=f"'{cloud}'"):
        runpod.parse(edited(SWEEP, drop), OBSERVED_AT)


# parse: REST v2


def test_rest_v2_and_the_sweep_give_the_same_secure_on_demand_offers():
    def secure(body):
        return {
            key: offer._asdict()
            for key, offer in offers_by_key(body).items()
            if offer.tier == "secure" and key[1] == Pricing.ON_DEMAND
        }

    rest = secure(REST_BODY)
    assert rest == secure(SWEEP)
    assert {o["region"] for o in rest.values()} == set(SECURE_DCS) | {None}


def test_rest_v2_community_offers_stay_unlocated_like_the_catalog_answer_and_have_no_spot():
    rest = offers_by_key(REST_BODY)
    assert all(pricing == Pricing.ON_DEMAND for _, pricing in rest)
    community = {k: o._asdict() for k, o in rest.items() if o.tier == "community"}
    assert community == {
        k: o._asdict()
        for k, o in offers_by_key(BODY).items()
        if o.tier == "community" and k[1] == Pricing.ON_DEMAND
    }
    assert {o["region"] for o in community.values()} == {None}


def test_a_rest_record_without_datacenters_gives_one_unlocated_offer_per_cloud():
    def drop_datacenters(data):
        for record in data["gpus"]:
            del record["dataCenters"]

    offers = offers_by_key(edited(REST_BODY, drop_datacenters))
    assert {o.region for o in offers.values()} == {None}
    assert offers[("NVIDIA H100 80GB HBM3:secure", Pricing.ON_DEMAND)].available  # HIGH
    assert not offers[("NVIDIA B200:secure", Pricing.ON_DEMAND)].available  # NONE


def test_a_rest_datacenter_whose_availability_is_none_gets_no_offer():
    offers = located("NVIDIA A100-SXM4-80GB", "secure", body=REST_BODY)
    assert set(offers) == {"CA-MTL-1"}  # EUR-IS-1 is listed with availability NONE


@pytest.mark.parametrize(("availability", "available"), [("HIGH", True), ("NONE", False)])
def test_an_empty_rest_datacenter_list_falls_back_to_the_type_wide_availability(
    availability, available
):
    def empty(data):
        data["gpus"][2].update(dataCenters=[], availability=availability)

    offers = located("NVIDIA H100 80GB HBM3", "secure", body=edited(REST_BODY, empty))
    assert set(offers) == {None} and offers[None].available is available


@pytest.mark.parametrize(
    ("body", "records", "keys"),
    [
        (BODY, lambda data: data["data"]["gpuTypes"], ("securePrice", "communityPrice")),
        (REST_BODY, lambda data: [r["price"] for r in data["gpus"]], ("secure", "community")),
    ],
    ids=["graphql", "rest"],
)
def test_a_record_without_price_keys_is_a_reject_not_silently_dropped(body, records, keys):
    def unpriced(data):
        for key in keys:
            records(data)[1].pop(key)

    result = runpod.parse(edited(body, unpriced), OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "NVIDIA A100-SXM4-80GB"
    assert reject.reason.startswith("missing field") and keys[0] in reject.reason
    assert orjson.loads(reject.raw)["id"] == reject.record_id  # the provider's own record


@pytest.mark.parametrize(
    ("body", "records"),
    [
        (BODY, lambda data: data["data"]["gpuTypes"]),
        (SWEEP, lambda data: data["base"]["data"]["gpuTypes"]),
        (REST_BODY, lambda data: data["gpus"]),
    ],
    ids=["graphql", "sweep", "rest"],
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


def test_a_rest_record_with_malformed_datacenters_is_rejected():
    def spoil(data):
        data["gpus"][2]["dataCenters"] = [{"name": "no id"}]

    result = runpod.parse(edited(REST_BODY, spoil), OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "NVIDIA H100 80GB HBM3" and "dataCenters" in reject.reason


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


def recorded_runpod(request: httpx.Request) -> httpx.Response:
    """RunPod's GraphQL as the sweep fixture recorded it: the catalog, then stock per location."""
    sweep = orjson.loads(SWEEP)
    sent = orjson.loads(request.content)
    if sent["query"] == runpod.QUERY:
        return httpx.Response(200, json=sweep["base"])
    lowest = sent["variables"]["lowestPriceInput"]
    cloud = "secure" if lowest["secureCloud"] else "community"
    return httpx.Response(
        200, json=sweep[cloud][lowest.get("dataCenterId", lowest.get("countryCode"))]
    )


def failing_at(location: str, answer: httpx.Response | Exception):
    """`recorded_runpod`, except that the request for `location` gets `answer`."""

    def respond(request: httpx.Request) -> httpx.Response:
        lowest = orjson.loads(request.content)["variables"]["lowestPriceInput"]
        if location in (lowest.get("dataCenterId"), lowest.get("countryCode")):
            if isinstance(answer, Exception):
                raise answer
            return answer
        return recorded_runpod(request)

    return respond


@respx.mock(assert_all_mocked=True)
def test_fetch_without_key_asks_the_catalog_then_each_listed_datacenter_and_country(
    respx_mock, client_factory
):
    route = respx_mock.post(runpod.URL).mock(side_effect=recorded_runpod)
    with client_factory() as client:
        body = runpod.fetch(client, None)
    assert orjson.loads(body) == orjson.loads(SWEEP)

    requests = [call.request for call in route.calls]
    assert all(r.headers["User-Agent"] == USER_AGENT for r in requests)
    assert not any("Authorization" in r.headers for r in requests)
    first, *stock = (orjson.loads(r.content) for r in requests)
    assert first == {"query": runpod.QUERY, "variables": {"lowestPriceInput": {"gpuCount": 1}}}
    assert {sent["query"] for sent in stock} == {runpod.STOCK_QUERY}
    assert [sent["variables"] for sent in stock] == [
        {"lowestPriceInput": {"gpuCount": 1, "secureCloud": True, "dataCenterId": dc}}
        for dc in SECURE_DCS  # US-DE-1 is not listed: not asked
    ] + [
        {"lowestPriceInput": {"gpuCount": 1, "secureCloud": False, "countryCode": cc}}
        for cc in COUNTRIES  # the null country code is not asked
    ]


@respx.mock(assert_all_mocked=True)
def test_fetch_that_gets_the_catalog_back_for_a_stock_query_returns_the_catalog_alone(
    respx_mock, client_factory
):
    route = respx_mock.post(runpod.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert runpod.fetch(client, None) == BODY  # a replay: parses as before, unlocated
    assert route.call_count == 2


@pytest.mark.parametrize(
    "body", [SWEEP, REST_BODY, GRAPHQL_ERRORS, BODY[:100]], ids=["sweep", "rest", "errors", "cut"]
)
@respx.mock(assert_all_mocked=True)
def test_fetch_returns_a_body_that_is_no_catalog_answer_as_it_is(respx_mock, client_factory, body):
    route = respx_mock.post(runpod.URL).mock(return_value=httpx.Response(200, content=body))
    with client_factory() as client:
        assert runpod.fetch(client, None) == body  # `parse` replays it or says what is wrong
    assert route.call_count == 1


@pytest.mark.parametrize(
    "edit",
    [
        lambda data: (data["data"].pop("dataCenters"), data["data"].pop("countryCodes")),
        lambda data: data["data"].update(dataCenters=[], countryCodes=[None]),
    ],
    ids=["plain-gpuTypes-answer", "nothing-listed"],
)
@respx.mock(assert_all_mocked=True)
def test_a_catalog_without_locations_is_one_request_read_as_unlocated_offers(
    respx_mock, client_factory, edit
):
    body = edited(orjson.dumps(orjson.loads(SWEEP)["base"]), edit)
    route = respx_mock.post(runpod.URL).mock(return_value=httpx.Response(200, content=body))
    with client_factory() as client:
        assert runpod.fetch(client, None) == body
    assert route.call_count == 1
    result = runpod.parse(body, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count > 0
    assert {o.region for o in result.offers} == {None}


def test_a_plain_gpu_types_answer_gives_unlocated_offers_with_the_type_wide_stock():
    def plain(data):
        data["data"].pop("dataCenters", None)
        data["data"].pop("countryCodes", None)

    records = gpu_types(orjson.loads(BODY))
    offers = offers_by_key(edited(BODY, plain))
    h100 = offers[("NVIDIA H100 80GB HBM3:secure", Pricing.ON_DEMAND)]
    stock = records["NVIDIA H100 80GB HBM3"]["lowestPrice"]["stockStatus"]
    assert h100.region is None and h100.available == (stock in ("High", "Medium", "Low"))


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (httpx.Response(500), r"HTTP 500 .*\(stock in secure EU-RO-1\)"),
        (httpx.ReadTimeout("slow"), r"timed out .*\(stock in secure EU-RO-1\)"),
        (httpx.Response(200, content=b"<html>"), "stock answer for secure EU-RO-1 is not JSON"),
    ],
    ids=["500", "timeout", "not-json"],
)
@respx.mock(assert_all_mocked=True)
def test_fetch_fails_at_the_first_location_request_that_fails(
    respx_mock, client_factory, answer, error
):
    route = respx_mock.post(runpod.URL).mock(side_effect=failing_at("EU-RO-1", answer))
    with (
        client_factory() as client,
        pytest.raises((ProviderHTTPError, ProviderPayloadError)) as exc,
    ):
        runpod.fetch(client, None)
    assert exc.match(error)
    asked = [orjson.loads(c.request.content)["variables"]["lowestPriceInput"] for c in route.calls]
    assert asked[-1].get("dataCenterId") == "EU-RO-1"  # nothing asked after the failure


@respx.mock(assert_all_mocked=True)
def test_fetch_with_key_gets_the_rest_v2_catalog_with_a_bearer_header(respx_mock, client_factory):
    route = respx_mock.get(runpod.REST_URL).mock(
        return_value=httpx.Response(200, content=REST_BODY)
    )
    with client_factory() as client:
        assert runpod.fetch(client, Credentials("secret-key")) == REST_BODY
    assert route.call_count == 1  # REST v2 lists the datacenters per GPU: no sweep
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


@pytest.mark.parametrize("where", ["catalog", "EU-SE-1", "FR"])
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
def test_fetch_retries_429_and_5xx_then_succeeds(respx_mock, client_factory, first, waits, where):
    answered: set[str] = set()

    def respond(request: httpx.Request) -> httpx.Response:
        sent = orjson.loads(request.content)
        lowest = sent["variables"]["lowestPriceInput"]
        asked = lowest.get("dataCenterId") or lowest.get("countryCode") or "catalog"
        if asked == where and asked not in answered:
            answered.add(asked)
            return first
        return recorded_runpod(request)

    respx_mock.post(runpod.URL).mock(side_effect=respond)
    with client_factory() as client:
        assert orjson.loads(runpod.fetch(client, None)) == orjson.loads(SWEEP)
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


def stored_regions(warehouse) -> set[str | None]:
    with warehouse.cursor() as cur:
        rows = cur.execute(
            "SELECT DISTINCT region FROM offer_observations WHERE provider = 'runpod'"
        ).fetchall()
    return {region for (region,) in rows}


def stored_run(warehouse) -> tuple[str, str | None]:
    with warehouse.cursor() as cur:
        return cur.execute(
            "SELECT status, error FROM collection_runs WHERE provider = 'runpod'"
        ).fetchone()


@pytest.mark.parametrize(
    ("env", "method", "url", "answer", "body"),
    [
        ({}, "POST", runpod.URL, {"side_effect": recorded_runpod}, SWEEP),
        (
            {"RUNPOD_API_KEY": "k"},
            "GET",
            runpod.REST_URL,
            {"return_value": httpx.Response(200, content=REST_BODY)},
            REST_BODY,
        ),
    ],
    ids=["graphql", "rest"],
)
@respx.mock(assert_all_mocked=True)
def test_a_successful_run_stores_every_offer_with_canonical_gpus_and_regions(
    respx_mock, client_factory, warehouse, env, method, url, answer, body
):
    respx_mock.route(method=method, url__startswith=url).mock(**answer)
    [report] = run_collection(["runpod"], warehouse, client_factory=client_factory, env=env)
    assert (report.status, report.reject_count) == ("ok", 0)
    parsed = runpod.parse(body, OBSERVED_AT)
    assert stored_offers(warehouse) == report.offer_count == len(parsed.offers)
    assert {"EU-RO-1", "EU-SE-1", "EU-NL-1", "EUR-IS-1"} <= stored_regions(warehouse)
    with warehouse.cursor() as cur:
        gpu, form_factor = cur.execute(
            "SELECT gpu, form_factor FROM offer_observations WHERE gpu_raw = ?",
            ["NVIDIA H100 80GB HBM3"],
        ).fetchone()
    assert (gpu, form_factor) == ("H100-80GB", "SXM")


@pytest.mark.parametrize(
    ("fixture", "regions"),
    [
        ("runpod_sweep.json", set(SECURE_DCS) | set(COUNTRIES) | {None}),
        ("runpod_catalog_v2.json", set(SECURE_DCS) | {None}),
        ("runpod_gpu_types.json", {None}),  # an older recording: unlocated, as it was stored
    ],
)
def test_a_replayed_body_of_each_kind_goes_through_the_graphql_fetch_and_parses(
    warehouse, fixture, regions
):
    path = FIXTURES / fixture
    [report] = run_collection(["runpod"], warehouse, replays={"runpod": path}, env={})
    assert report.status == "ok"
    expected = runpod.parse(path.read_bytes(), OBSERVED_AT).offers
    assert stored_offers(warehouse) == report.offer_count == len(expected)
    assert stored_regions(warehouse) == regions


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


@pytest.mark.parametrize(
    ("location", "answer", "error"),
    [
        ("EUR-IS-1", httpx.Response(500), "HTTP 500"),
        ("US", httpx.Response(429), "HTTP 429"),
        ("CZ", httpx.ConnectTimeout("slow"), "timed out"),
        ("EU-NL-1", httpx.Response(200, content=GRAPHQL_ERRORS), "Something went wrong"),
        ("FR", httpx.Response(200, content=b'{"data": {"gpu'), "not JSON"),
    ],
    ids=["500", "429", "timeout", "graphql-errors", "truncated"],
)
@respx.mock(assert_all_mocked=True)
def test_a_failed_location_request_fails_the_whole_run_and_stores_nothing(
    respx_mock, client_factory, warehouse, location, answer, error
):
    respx_mock.post(runpod.URL).mock(side_effect=failing_at(location, answer))
    [report] = run_collection(["runpod"], warehouse, client_factory=client_factory, env={})
    assert report.status == "failed"
    assert error in (report.error or "") and location in (report.error or "")
    status, stored_error = stored_run(warehouse)
    assert status == "failed" and error in stored_error
    assert stored_offers(warehouse) == 0


BLACKWELL = fixture_bytes("runpod_gpu_types_blackwell.json")


def test_rtx_pro_4500_and_5000_blackwell_resolve_to_catalog_ids():
    from pipeline.collection.normalize import normalize

    result = normalize(runpod.parse(BLACKWELL, OBSERVED_AT), get_catalog())
    gpu_of = {o.gpu_raw: o.gpu for o in result.offers}
    assert gpu_of["NVIDIA RTX PRO 4500 Blackwell"] == "RTX PRO 4500"
    assert gpu_of["NVIDIA RTX PRO 4500 Blackwell Server Edition"] == "RTX PRO 4500"
    assert gpu_of["NVIDIA RTX PRO 5000 Blackwell"] == "RTX PRO 5000"
    assert gpu_of["NVIDIA RTX PRO 6000 Blackwell Server Edition"] == "RTX PRO 6000"


def test_mig_slices_are_rejected_with_their_profile_never_listed_as_whole_gpus():
    result = runpod.parse(BLACKWELL, OBSERVED_AT)
    assert not [o for o in result.offers if "MIG" in o.gpu_raw]
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert set(reasons) == {
        "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 2g.48gb",
    }
    assert reasons["NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 2g.48gb"].startswith(
        "MIG slice 2g.48gb is a fraction of one GPU"
    )


def test_an_unpriced_mig_slice_is_neither_an_offer_nor_a_reject():
    body = orjson.loads(BLACKWELL)
    for record in body["data"]["gpuTypes"]:
        record["securePrice"] = None
    result = runpod.parse(orjson.dumps(body), OBSERVED_AT)
    assert result.rejects == []
    assert {o.gpu_raw for o in result.offers} == {
        "NVIDIA RTX PRO 4500 Blackwell", "NVIDIA H100 80GB HBM3"}  # fmt: skip
