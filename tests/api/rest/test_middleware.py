"""Hostile requests (issue 17): each is a 4xx problem detail saying what to fix, never a 500."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.deps import get_resolver
from api.rest.middleware import BODY_LIMITS_BYTES, DEFAULT_BODY_LIMIT_BYTES
from api.rest.problems import PROBLEM_MEDIA_TYPE
from pipeline.settings import Settings
from tests.conftest import LOOPBACK_URL

MB = 1024 * 1024
PUBLIC_ADDRESS = "93.184.215.14"  # what example.com resolves to; nothing is sent in these tests
PRICE_ALERT = {
    "url": "https://example.com/hooks/gpu",
    "kind": "price",
    "gpu": "H100",
    "below_price_per_gpu_hour": 2.0,
}
QUOTE = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": "50M"}
WORKLOAD_ALERT = {
    "url": "https://example.com/hooks/gpu",
    "kind": "workload",
    "below_cost_usd": 50,
    "workload": QUOTE,
}


@pytest.fixture
def client(db_path):
    app = create_app(Settings(db=db_path, scheduler=False))
    app.dependency_overrides[get_resolver] = lambda: lambda host, port: [PUBLIC_ADDRESS]
    with TestClient(app, base_url=LOOPBACK_URL, raise_server_exceptions=False) as test_client:
        yield test_client


def problem(response, status: int) -> dict:
    """The body of a problem-details answer, after checking its shape."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    assert body["status"] == status and body["type"] == "about:blank" and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def post_json(client, url: str, text: str):
    return client.post(url, content=text, headers={"content-type": "application/json"})


def test_a_20_mb_quote_body_is_refused_from_its_length_with_the_limit_stated(client):
    body = problem(post_json(client, "/quotes", "x" * (20 * MB)), 413)
    limit = BODY_LIMITS_BYTES[("POST", "/quotes")]
    assert f"{limit} bytes" in body["detail"]


def test_a_streamed_body_without_a_length_is_cut_off_at_the_limit(client):
    chunks = (b"x" * 65536 for _ in range(320))  # 20 MB, chunked: no Content-Length
    response = client.post("/quotes", content=chunks, headers={"content-type": "application/json"})
    assert "over this route's limit" in problem(response, 413)["detail"]


def test_a_10_mb_region_or_100000_providers_never_reach_the_alerts(client):
    huge_region = json.dumps({**PRICE_ALERT, "region": "x" * (10 * MB)})
    assert "limit" in problem(post_json(client, "/alerts", huge_region), 413)["detail"]
    providers = json.dumps({**PRICE_ALERT, "providers": ["vastai"] * 100_000})
    problem(post_json(client, "/alerts", providers), 413)


def test_strings_and_lists_under_the_body_limit_are_still_bounded(client):
    long_region = {**PRICE_ALERT, "region": "x" * 5_000}
    body = problem(client.post("/alerts", json=long_region), 422)
    assert body["errors"][0]["field"] == "region" and "at most 200" in body["detail"]
    many = {**PRICE_ALERT, "providers": ["vastai"] * 500}
    assert problem(client.post("/alerts", json=many), 422)["errors"][0]["field"] == "providers"


def test_every_other_route_takes_small_bodies_only(client):
    response = client.request("GET", "/healthz", content=b"x" * (DEFAULT_BODY_LIMIT_BYTES + 1))
    problem(response, 413)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_in_a_body_is_a_field_error_not_a_500(client, literal):
    text = json.dumps(PRICE_ALERT).replace("2.0", literal)
    body = problem(post_json(client, "/alerts", text), 422)
    assert body["errors"] == [
        {
            "location": "body",
            "field": "below_price_per_gpu_hour",
            "detail": "Input should be a finite number",
        }
    ]
    quote = json.dumps({**QUOTE, "max_hours": 1.5}).replace("1.5", literal)
    assert problem(post_json(client, "/quotes", quote), 422)["errors"][0]["field"] == "max_hours"


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/offers?max_age=" + "1" + "0" * 30, "max_age"),
        ("/offers?max_age=999999999999999999w", "max_age"),
        ("/offers?as_of=0001-01-01T00:00:00Z", "as_of"),
        ("/prices/history?gpu=H100&until=0001-01-01T00:00:00Z", "until"),
        ("/export/history.csv?gpu=H100&until=0001-01-01T00:00:00Z", "until"),
        ("/export/history.parquet?gpu=H100&since=9999-12-31T23:59:59Z", "since"),
        ("/offers?limit=100000", "limit"),
        ("/offers?max_price_per_gpu=inf", "max_price_per_gpu"),
    ],
)
def test_overflowing_query_values_are_422_naming_the_field(client, url, field):
    assert problem(client.get(url), 422)["errors"][0]["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**QUOTE, "model": None, "params_b": 1e308}, "params_b"),
        ({**QUOTE, "tokens": 10**300}, "tokens"),
        ({**QUOTE, "top": 100_000}, "top"),
        ({**QUOTE, "seq_len": 10**300}, "seq_len"),
        ({**QUOTE, "model": None, "config": {"hidden_size": 10**300}}, "config"),
    ],
)
def test_overflowing_quote_values_are_422_naming_the_field(client, body, field):
    assert problem(client.post("/quotes", json=body), 422)["errors"][0]["field"] == field


def test_tokens_of_1e400_are_a_field_error(client):
    text = json.dumps({**QUOTE, "tokens": 1}).replace('"tokens": 1', '"tokens": 1e400')
    assert problem(post_json(client, "/quotes", text), 422)["errors"][0]["field"] == "tokens"


def test_the_cap_on_quotes_and_offer_pages_is_stated_in_the_error(client):
    assert "10000" in problem(client.post("/quotes", json={**QUOTE, "top": 10_001}), 422)["detail"]
    assert "10000" in problem(client.get("/offers?limit=10001"), 422)["detail"]


@pytest.mark.parametrize("cooldown", ["99999999999999w", 1e300, "abc", "-1h"])
def test_an_impossible_cooldown_is_422(client, cooldown):
    body = problem(client.post("/alerts", json={**PRICE_ALERT, "cooldown": cooldown}), 422)
    assert body["errors"][0]["field"] == "cooldown"


def test_an_iso_8601_cooldown_is_a_duration(client):
    response = client.post("/alerts", json={**PRICE_ALERT, "cooldown": "PT0S"})
    assert response.status_code == 201 and response.json()["cooldown_seconds"] == 0
    response = client.post("/alerts", json={**PRICE_ALERT, "cooldown": "PT2H"})
    assert response.status_code == 201 and response.json()["cooldown_seconds"] == 7200


def test_a_workload_alert_is_checked_as_the_quote_it_will_run(client):
    bad = {**WORKLOAD_ALERT, "workload": {**QUOTE, "max_hours": "abc"}}
    body = problem(client.post("/alerts", json=bad), 422)
    assert "max_hours" in body["detail"]
    huge = {**WORKLOAD_ALERT, "workload": {**QUOTE, "tokens": 10**300}}
    problem(client.post("/alerts", json=huge), 422)
    assert client.get("/alerts").json()["count"] == 0
    assert client.post("/alerts", json=WORKLOAD_ALERT).status_code == 201


def test_an_unknown_query_parameter_is_422_naming_the_known_ones(client):
    body = problem(client.get("/offers?gpus=H100"), 422)
    assert body["errors"][0]["field"] == "gpus"
    assert "known: as_of, continent, country" in body["detail"] and "gpu," in body["detail"]


def test_query_models_count_as_known_parameters(client):
    response = client.get("/offers/best?model=Llama-3.1-8B&method=qlora&tokens=50M&colour=red")
    assert "Unknown query parameter 'colour'" in problem(response, 422)["detail"]


def test_a_route_without_parameters_refuses_any(client):
    assert "takes none" in problem(client.get("/healthz?verbose=1"), 422)["detail"]


def test_the_web_page_reads_its_query_leniently(client):
    assert client.get("/?utm_source=mail").status_code == 200


@pytest.mark.parametrize("url", ["/healthz", "/offers", "/gpus", "/metrics", "/alerts"])
def test_head_answers_wherever_get_does_without_a_body(client, url):
    get, head = client.get(url), client.head(url)
    assert head.status_code == get.status_code == 200
    assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]


def test_401_404_and_unknown_routes_are_problems_too(db_path):
    app = create_app(Settings(db=db_path, scheduler=False, api_key="k"))
    with TestClient(app) as client:
        body = problem(client.get("/alerts"), 401)
        assert "API key" in body["detail"]
        authorized = {"Authorization": "Bearer k"}
        assert (
            "alr_nope" in problem(client.get("/alerts/alr_nope", headers=authorized), 404)["detail"]
        )
        problem(client.get("/no/such/route"), 404)


def test_a_pipeline_error_is_a_422_problem_with_its_sentence(client):
    body = problem(client.get("/offers?gpu=Z9000"), 422)
    assert body["detail"].startswith("Unknown GPU 'Z9000'")


def test_openapi_documents_a_problem_for_every_error_of_every_operation(client):
    spec = client.get("/openapi.json").json()
    assert "Problem" in spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            statuses = {"422", "500", "503"} | ({"413"} if "requestBody" in operation else set())
            if path.startswith("/alerts"):
                statuses.add("401")
            for status in statuses:
                assert PROBLEM_MEDIA_TYPE in responses[status]["content"], (method, path, status)
    exports = spec["paths"]["/export/offers.{fmt}"]["get"]["responses"]["200"]["content"]
    assert set(exports) == {"text/csv", "application/vnd.apache.parquet"}
    assert set(spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == {"text/plain"}
    limit = next(p for p in spec["paths"]["/offers"]["get"]["parameters"] if p["name"] == "limit")
    assert limit["schema"]["anyOf"][0]["maximum"] == 10_000 and "10,000" in limit["description"]


def test_a_flood_of_unknown_parameters_lists_twenty(client):
    query = "&".join(f"p{i}=1" for i in range(1000))
    body = problem(client.get(f"/gpus?{query}"), 422)
    assert len(body["errors"]) == 20 and "(and 17 more in errors)" in body["detail"]
