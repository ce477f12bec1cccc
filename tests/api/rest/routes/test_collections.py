"""`POST /collections`: the server collects; uploads are the bodies; who may ask."""

from __future__ import annotations

from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.middleware import BODY_LIMITS_BYTES, DEFAULT_BODY_LIMIT_BYTES
from pipeline.settings import Settings
from tests.conftest import FIXTURES

LOOPBACK = ("127.0.0.1", 50000)
ELSEWHERE = ("203.0.113.9", 50000)
VAST = ("replay", ("vastai.json", (FIXTURES / "vastai_bundles.json").read_bytes()))


def client(warehouse, db_path, address, **settings) -> TestClient:
    app = create_app(Settings(db=db_path, scheduler=False, **settings), warehouse)
    return TestClient(app, client=address)


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
        allowed = api.post(
            "/collections", files=[VAST], headers={"Authorization": "Bearer s3cret"}
        )
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
