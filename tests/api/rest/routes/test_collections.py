"""`POST /collections`: the server collects; uploads are the bodies; who may ask."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.middleware import BODY_LIMITS_BYTES, DEFAULT_BODY_LIMIT_BYTES
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL

LOOPBACK = ("127.0.0.1", 50000)
ELSEWHERE = ("203.0.113.9", 50000)
VAST = ("replay", ("vastai.json", (FIXTURES / "vastai_bundles.json").read_bytes()))


def client(warehouse, db_path, address, **settings) -> TestClient:
    app = create_app(Settings(db=db_path, scheduler=False, **settings), warehouse)
    return TestClient(app, base_url=LOOPBACK_URL, client=address)


def test_a_loopback_client_makes_the_server_replay_the_uploaded_body(warehouse, db_path):
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", files=[VAST], data={"at": "2026-01-01T00:00:00Z"})
        assert response.status_code == 200, response.text
        (run,) = response.json()["runs"]
        assert (run["provider"], run["status"], run["offer_count"]) == ("vastai", "ok", 13)
        assert run["observed_at"] == "2026-01-01T00:00:00Z"
        offers = api.get("/offers", params={"provider": "vastai"}).json()
        assert offers["count"] == 13


def test_another_machine_without_the_key_is_refused(warehouse, db_path):
    with client(warehouse, db_path, ELSEWHERE) as api:
        response = api.post("/collections", files=[VAST])
    assert response.status_code == 403
    assert "GPUPRICES_API_KEY" in response.json()["detail"]


def test_with_a_key_set_the_key_is_needed_from_anywhere(warehouse, db_path):
    with client(warehouse, db_path, ELSEWHERE, api_key="s3cret") as api:
        assert api.post("/collections", files=[VAST]).status_code == 401
        allowed = api.post("/collections", files=[VAST], headers={"Authorization": "Bearer s3cret"})
    assert allowed.status_code == 200 and allowed.json()["runs"][0]["status"] == "ok"
    with client(warehouse, db_path, LOOPBACK, api_key="s3cret") as api:
        assert api.post("/collections", files=[VAST]).status_code == 401


def test_an_api_replica_answers_409_naming_the_collector_role(warehouse, db_path):
    with client(warehouse, db_path, LOOPBACK, role="api") as api:
        response = api.post("/collections", files=[VAST])
    assert response.status_code == 409
    assert "collector" in response.json()["detail"]


def test_a_file_not_named_after_a_provider_is_a_422(warehouse, db_path):
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", files=[("replay", ("prices.json", b"{}"))])
    assert response.status_code == 422
    assert "name each file after its provider" in response.json()["detail"]


def test_a_failed_replay_is_reported_not_raised(warehouse, db_path):
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", files=[("replay", ("vastai.json", b"not json"))])
    assert response.status_code == 200
    (run,) = response.json()["runs"]
    assert run["status"] == "failed" and "not JSON" in run["error"]


def test_the_route_has_its_own_upload_limit(warehouse, db_path):
    limit = BODY_LIMITS_BYTES[("POST", "/collections")]
    assert limit >= 1024 * DEFAULT_BODY_LIMIT_BYTES  # recorded answers are MBs
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post(
            "/collections",
            content=b"x",
            headers={"Content-Length": str(limit + 1), "Content-Type": "multipart/form-data"},
        )
    assert response.status_code == 413


def test_a_directory_of_answers_is_uploaded_file_by_file_under_its_provider(warehouse, db_path):
    answers = sorted((FIXTURES / "scaleway_answers").iterdir())
    files = [("replay", (f"scaleway/{f.name}", f.read_bytes())) for f in answers]
    ecb = ("replay", ("ecb.xml", (FIXTURES / "ecb_eurofxref_daily.xml").read_bytes()))
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", files=[ecb, *files])
        assert response.status_code == 200, response.text
        runs = {run["provider"]: run for run in response.json()["runs"]}
        assert runs["scaleway"]["status"] == "ok" and runs["scaleway"]["offer_count"] > 0


def test_a_directory_name_that_is_not_a_provider_is_a_422(warehouse, db_path):
    bad = ("replay", ("nowhere/servers-fr-par-2-1.json", b"{}"))
    with client(warehouse, db_path, LOOPBACK) as api:
        assert api.post("/collections", files=[bad]).status_code == 422


def no_runs(warehouse) -> int:
    from pipeline.market.offers import provider_runs

    return len(provider_runs(warehouse))


@pytest.mark.parametrize(
    "name", ["vastai\x00.json", "v\x07astai.json", "a" * 256 + ".json", "vastai/" + "b" * 300]
)
def test_a_file_name_with_control_characters_or_over_255_characters_is_a_422(
    warehouse, db_path, name
):
    body = (  # raw: httpx would escape the control characters
        b'--xx\r\nContent-Disposition: form-data; name="replay"; filename="'
        + name.encode()
        + b'"\r\n\r\n{}\r\n--xx--\r\n'
    )
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post(
            "/collections",
            content=body,
            headers={"Content-Type": "multipart/form-data; boundary=xx"},
        )
    assert response.status_code == 422, response.text
    assert "file name" in response.json()["detail"] and len(response.text) < 1000


MALFORMED = {
    "multipart without its closing boundary": (
        b'--xx\r\nContent-Disposition: form-data; name="replay"; filename="vastai.json"\r\n\r\n{}',
        "multipart/form-data; boundary=xx",
    ),
    "a JSON body": (b'{"provider": ["vastai"]}', "application/json"),
    "an urlencoded body without live": (b"provider=vastai", "application/x-www-form-urlencoded"),
    "an empty form": (b"--xx--\r\n", "multipart/form-data; boundary=xx"),
    "no content type": (b"", ""),
}


@pytest.mark.parametrize("body,content_type", MALFORMED.values(), ids=list(MALFORMED))
def test_a_malformed_or_empty_body_is_a_4xx_and_collects_nothing(
    warehouse, db_path, body, content_type, client_factory
):
    app = create_app(
        Settings(db=db_path, scheduler=False), warehouse, client_factory=client_factory
    )
    with TestClient(app, base_url=LOOPBACK_URL, client=LOOPBACK) as api:
        response = api.post("/collections", content=body, headers={"Content-Type": content_type})
    assert 400 <= response.status_code < 500, response.text
    assert no_runs(warehouse) == 0


def test_a_live_collection_is_asked_for_with_live_true(warehouse, db_path, respx_mock):
    from scrapers import vastai

    respx_mock.post(vastai.URL).respond(content=(FIXTURES / "vastai_bundles.json").read_bytes())
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", data={"provider": "vastai", "live": "true"})
    assert response.status_code == 200, response.text
    (run,) = response.json()["runs"]
    assert (run["provider"], run["status"]) == ("vastai", "ok")


def test_a_provider_named_beside_replays_is_fetched_only_with_live_true(warehouse, db_path):
    with client(warehouse, db_path, LOOPBACK) as api:
        response = api.post("/collections", files=[VAST], data={"provider": "runpod"})
    assert response.status_code == 422 and "live=true" in response.json()["detail"]
    assert no_runs(warehouse) == 0
