"""`/alerts` through `create_app`: creation, secrets shown once, 422 for unsafe targets, the key."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.deps import get_resolver
from pipeline.settings import Settings
from tests.conftest import LOOPBACK_URL
from tests.pipeline.alerts.receiver import Answer, receiving

KEY = "k3y-for-alert-management"
AUTH = {"Authorization": f"Bearer {KEY}"}


def price_alert(url: str, **extra) -> dict:
    return {
        "url": url,
        "kind": "price",
        "gpu": "H100-80GB",
        "below_price_per_gpu_hour": 1.5,
        **extra,
    }


@pytest.fixture
def app_client(collected, db_path):
    settings = Settings(db=db_path, scheduler=False, allow_private_webhooks=True)
    app = create_app(settings, collected, clock=lambda: datetime.now(UTC))
    with TestClient(app, base_url=LOOPBACK_URL) as client:
        yield client


@pytest.fixture
def strict_client(collected, db_path):
    """Default safety rules and an API key, as a deployment has them."""
    settings = Settings(db=db_path, scheduler=False, api_key=KEY)
    app = create_app(settings, collected)
    app.dependency_overrides[get_resolver] = lambda: lambda host, port: ["93.184.215.14"]
    with TestClient(app, base_url=LOOPBACK_URL) as client:
        yield client


def test_creating_an_alert_returns_it_with_its_secret_once(app_client):
    response = app_client.post("/alerts", json=price_alert("http://127.0.0.1:9/hook"))
    assert response.status_code == 201
    created = response.json()
    assert created["id"].startswith("alr_") and created["secret"].startswith("whsec_")
    assert created["kind"] == "price" and created["state"] is None
    assert created["band"] == 0.05 and created["cooldown_seconds"] == 0
    for path in ("/alerts", f"/alerts/{created['id']}", f"/alerts/{created['id']}/deliveries"):
        answer = app_client.get(path)
        assert answer.status_code == 200 and "whsec_" not in answer.text
    assert created["secret"] not in app_client.get("/openapi.json").text
    listed = app_client.get("/alerts").json()
    assert listed["count"] == 1 and "secret" not in listed["alerts"][0]


@pytest.mark.parametrize(
    "url", ["https://169.254.169.254/", "http://10.0.0.1/", "https://10.0.0.1/", "ftp://x/"]
)
def test_unsafe_targets_are_refused_with_422(strict_client, url):
    response = strict_client.post("/alerts", json=price_alert(url), headers=AUTH)
    assert response.status_code == 422, response.text
    assert "Webhook" in response.json()["detail"]


@pytest.mark.parametrize("url", ["https://xn--/", "https://[fec0::1]/", "https://a..b/"])
def test_a_host_that_is_no_valid_public_name_is_a_422(strict_client, url):
    response = strict_client.post("/alerts", json=price_alert(url), headers=AUTH)
    assert response.status_code == 422, response.text
    assert "Webhook" in response.json()["detail"]


def test_a_name_resolving_to_a_public_address_is_accepted(strict_client):
    response = strict_client.post(
        "/alerts", json=price_alert("https://hooks.example.com/gpu"), headers=AUTH
    )
    assert response.status_code == 201


def test_the_metadata_address_is_refused_even_when_private_targets_are_allowed(app_client):
    response = app_client.post("/alerts", json=price_alert("http://169.254.169.254/latest"))
    assert response.status_code == 422 and "metadata" in response.json()["detail"]


def test_alert_management_needs_the_api_key_when_one_is_configured(strict_client):
    body = price_alert("https://hooks.example.com/gpu")
    assert strict_client.post("/alerts", json=body).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    response = strict_client.post("/alerts", json=body, headers=wrong)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert strict_client.get("/alerts").status_code == 401
    assert strict_client.get("/alerts/alr_x/deliveries").status_code == 401
    assert strict_client.delete("/alerts/alr_x").status_code == 401
    assert strict_client.get("/alerts", headers=AUTH).status_code == 200
    assert KEY not in strict_client.get("/openapi.json").text


def test_price_reads_stay_open_when_a_key_is_configured(strict_client):
    assert strict_client.get("/offers").status_code == 200
    assert strict_client.get("/gpus").status_code == 200


def test_bad_conditions_are_422_naming_the_field(app_client):
    url = "http://127.0.0.1:9/hook"
    unknown = app_client.post("/alerts", json=price_alert(url, gpu="H9000"))
    assert unknown.status_code == 422 and "Unknown GPU 'H9000'" in unknown.json()["detail"]
    no_threshold = app_client.post("/alerts", json={"url": url, "kind": "price", "gpu": "H100"})
    assert no_threshold.status_code == 422
    assert "below_price_per_gpu_hour" in no_threshold.json()["detail"]
    bad_cooldown = app_client.post("/alerts", json=price_alert(url, cooldown="soonish"))
    assert bad_cooldown.status_code == 422


def test_an_alert_can_be_read_and_deleted_and_then_is_404(app_client):
    created = app_client.post(
        "/alerts", json=price_alert("http://127.0.0.1:9/hook", cooldown="1h", band=0.1)
    ).json()
    shown = app_client.get(f"/alerts/{created['id']}").json()
    assert shown["cooldown_seconds"] == 3600 and shown["band"] == 0.1
    assert app_client.delete(f"/alerts/{created['id']}").status_code == 204
    assert app_client.get(f"/alerts/{created['id']}").status_code == 404
    assert app_client.delete(f"/alerts/{created['id']}").status_code == 404
    assert app_client.get(f"/alerts/{created['id']}/deliveries").status_code == 404


def test_a_test_event_reaches_the_receiver_and_shows_in_the_delivery_log(app_client):
    with receiving([Answer(500), Answer(200)]) as receiver:
        created = app_client.post("/alerts", json=price_alert(receiver.url)).json()
        sent = app_client.post(f"/alerts/{created['id']}/test")
    assert sent.status_code == 200
    delivery = sent.json()
    assert delivery["status"] == "pending" and delivery["attempt_count"] == 1
    assert delivery["event"]["type"] == "alert.test"
    [attempt] = delivery["attempts"]
    assert attempt["status_code"] == 500 and attempt["outcome"] == "retry"
    assert delivery["next_attempt_at"] is not None
    assert receiver.ids() == [delivery["id"]]
    log = app_client.get(f"/alerts/{created['id']}/deliveries").json()
    assert log["count"] == 1 and log["deliveries"][0]["id"] == delivery["id"]
    assert log["deliveries"][0]["attempts"][0]["latency_ms"] >= 0


def test_testing_an_unknown_alert_is_404(app_client):
    assert app_client.post("/alerts/alr_nope/test").status_code == 404


@pytest.mark.parametrize("retry_after", ["99999999999999999999", "1" + "0" * 5000, "garbage"])
def test_a_test_answered_429_with_any_retry_after_is_a_recorded_retry_not_a_500(
    app_client, retry_after
):
    with receiving([Answer(429, {"retry-after": retry_after})]) as receiver:
        created = app_client.post("/alerts", json=price_alert(receiver.url)).json()
        sent = app_client.post(f"/alerts/{created['id']}/test")
    assert sent.status_code == 200
    delivery = sent.json()
    [attempt] = delivery["attempts"]
    assert (attempt["status_code"], attempt["outcome"]) == (429, "retry")
    waited = datetime.fromisoformat(delivery["next_attempt_at"]) - datetime.fromisoformat(
        attempt["attempted_at"]
    )
    assert waited.total_seconds() <= 3600  # the default longest backoff


def test_a_rule_whose_evaluation_failed_shows_its_error(app_client, collected):
    from pipeline.alerts import evaluate_alerts

    created = app_client.post("/alerts", json=price_alert("http://127.0.0.1:9/hook")).json()
    assert app_client.get(f"/alerts/{created['id']}").json()["evaluation_error"] is None
    with collected.transaction() as conn:  # a threshold of the wrong type, as a hand edit leaves
        conn.execute(
            "UPDATE alert_rules SET condition_json = replace(condition_json, '1.5', '\"1.5\"')"
        )
    evaluate_alerts(collected, Settings(scheduler=False), datetime.now(UTC))
    shown = app_client.get(f"/alerts/{created['id']}").json()
    assert shown["evaluation_error"].startswith("TypeError:")
    assert shown["evaluation_error_at"] is not None


def test_an_index_alert_is_created_with_its_move_and_look_back(app_client):
    body = {
        "url": "http://127.0.0.1:9/hook",
        "kind": "index",
        "gpu": "H100-80GB",
        "index_change_percent": -10,
        "within": "24h",
    }
    created = app_client.post("/alerts", json=body)
    assert created.status_code == 201, created.text
    assert (created.json()["index_change_percent"], created.json()["within_seconds"]) == (
        -10.0,
        86400.0,
    )
    refused = app_client.post("/alerts", json={**body, "within": None})
    assert refused.status_code == 422 and "within" in refused.text


def limited_client(collected, db_path, **settings) -> TestClient:
    app = create_app(
        Settings(db=db_path, scheduler=False, allow_private_webhooks=True, **settings), collected
    )
    return TestClient(app, base_url=LOOPBACK_URL, client=("127.0.0.1", 50000))


def test_rules_past_the_limit_are_a_422_saying_how_to_make_room(collected, db_path):
    with limited_client(collected, db_path, max_alert_rules=2) as client:
        for _ in range(2):
            assert (
                client.post("/alerts", json=price_alert("http://127.0.0.1:9/")).status_code == 201
            )
        refused = client.post("/alerts", json=price_alert("http://127.0.0.1:9/"))
    assert refused.status_code == 422
    assert "GPUPRICES_MAX_ALERT_RULES" in refused.json()["detail"]


def test_get_alerts_is_paged_with_limit_and_offset(collected, db_path):
    with limited_client(collected, db_path) as client:
        ids = [
            client.post("/alerts", json=price_alert("http://127.0.0.1:9/")).json()["id"]
            for _ in range(5)
        ]
        first = client.get("/alerts", params={"limit": 2}).json()
        last = client.get("/alerts", params={"limit": 2, "offset": 4}).json()
        too_many = client.get("/alerts", params={"limit": 100_000})
    assert [a["id"] for a in first["alerts"]] == ids[:2]
    assert (first["count"], first["total"], first["next_offset"]) == (2, 5, 2)
    assert [a["id"] for a in last["alerts"]] == ids[4:] and last["next_offset"] is None
    assert too_many.status_code == 422


def test_an_unknown_60_kb_id_is_a_404_that_does_not_echo_it(app_client):
    response = app_client.get("/alerts/" + "x" * 60_000)
    assert response.status_code == 404 and len(response.text) < 1000


@pytest.mark.parametrize("method,path", [("GET", "/alerts"), ("POST", "/alerts")])
def test_without_a_key_a_server_listening_beyond_loopback_refuses_other_machines(
    collected, db_path, method, path
):
    settings = Settings(db=db_path, scheduler=False, host="0.0.0.0", allow_private_webhooks=True)
    app = create_app(settings, collected)
    body = price_alert("http://127.0.0.1:9/") if method == "POST" else None
    with TestClient(app, base_url=LOOPBACK_URL, client=("203.0.113.9", 50000)) as elsewhere:
        refused = elsewhere.request(method, path, json=body)
    with TestClient(app, base_url=LOOPBACK_URL, client=("127.0.0.1", 50000)) as here:
        allowed = here.request(method, path, json=body)
    assert refused.status_code == 403 and "GPUPRICES_API_KEY" in refused.json()["detail"]
    assert allowed.status_code in (200, 201)
