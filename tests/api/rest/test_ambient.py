"""No write on ambient authority: without an API key, every write route (and `/mcp`) refuses a
foreign `Host` (DNS rebinding) and a request from another site (`Origin`, `Sec-Fetch-Site`)."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.ambient import READ_ONLY, WRITE_METHODS
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL

LOOPBACK = ("127.0.0.1", 50000)
VAST = ("replay", ("vastai.json", (FIXTURES / "vastai_bundles.json").read_bytes()))
CROSS_SITE = {
    "rebound Host": {"Host": "evil.example:8000"},
    "foreign Origin": {"Origin": "http://evil.example"},
    "null Origin": {"Origin": "null"},
    "another local port": {"Origin": "http://127.0.0.1:3000"},
    "cross-site fetch": {"Sec-Fetch-Site": "cross-site"},
    "same-site fetch": {"Sec-Fetch-Site": "same-site"},
}
SAME_ORIGIN = {
    "no headers (CLI, curl)": {},
    "the page itself": {"Origin": LOOPBACK_URL, "Sec-Fetch-Site": "same-origin"},
    "localhost": {"Host": "localhost:8000", "Origin": "http://localhost:8000"},
    "IPv6 loopback": {"Host": "[::1]:8000"},
    "typed by the user": {"Sec-Fetch-Site": "none"},
}


@pytest.fixture
def app(collected, db_path):
    return create_app(Settings(db=db_path, scheduler=False), collected)


def _writes(app) -> list[tuple[str, str]]:
    """Every write operation the API declares (path parameters filled), and `/mcp`."""
    found = [
        (method.upper(), re.sub(r"\{[^}]+\}", "alr_nope", path))
        for path, operations in app.openapi()["paths"].items()
        for method in operations
        if method.upper() in WRITE_METHODS and (method.upper(), path) not in READ_ONLY
    ]
    return [*found, ("POST", "/mcp"), ("DELETE", "/mcp")]


def test_the_writes_are_the_alerts_the_collections_and_mcp(app):
    writes = _writes(app)
    assert ("POST", "/collections") in writes and ("POST", "/alerts") in writes
    assert ("DELETE", "/alerts/alr_nope") in writes
    declared = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    assert declared >= READ_ONLY  # each read-only POST is a route that exists


@pytest.mark.parametrize("headers", CROSS_SITE.values(), ids=CROSS_SITE.keys())
def test_every_write_from_another_site_is_403_saying_what_to_fix(app, headers):
    with TestClient(app, base_url=LOOPBACK_URL, client=LOOPBACK) as client:
        for method, path in _writes(app):
            response = client.request(method, path, headers=headers, json={})
            assert response.status_code == 403, (method, path, response.text)
            detail = response.json()["detail"]
            assert "GPUPRICES_API_KEY" in detail and "127.0.0.1" in detail, detail


def test_a_cross_site_upload_does_not_replace_the_offers(app):
    with TestClient(app, base_url=LOOPBACK_URL, client=LOOPBACK) as client:
        before = client.get("/offers", params={"provider": "vastai"}).json()["count"]
        recorded = json.loads(VAST[1][1])
        one = ("replay", ("vastai.json", json.dumps({"offers": recorded["offers"][:1]}).encode()))
        for headers in CROSS_SITE.values():
            assert client.post("/collections", files=[one], headers=headers).status_code == 403
        assert client.get("/offers", params={"provider": "vastai"}).json()["count"] == before
        assert client.post("/collections", files=[one]).status_code == 200  # the same, from here
        assert client.get("/offers", params={"provider": "vastai"}).json()["count"] < before


@pytest.mark.parametrize("headers", SAME_ORIGIN.values(), ids=SAME_ORIGIN.keys())
def test_a_write_from_this_machine_by_its_loopback_name_is_taken(app, headers):
    with TestClient(app, base_url=LOOPBACK_URL, client=LOOPBACK) as client:
        response = client.post("/collections", files=[VAST], headers=headers)
    assert response.status_code == 200, response.text


def test_read_only_posts_answer_any_host(app):
    with TestClient(app, base_url=LOOPBACK_URL, client=LOOPBACK) as client:
        body = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": 1_000_000}
        response = client.post("/quotes", json=body, headers=CROSS_SITE["rebound Host"])
    assert response.status_code == 200, response.text


def test_with_a_key_the_bearer_decides_not_the_host(collected, db_path):
    app = create_app(Settings(db=db_path, scheduler=False, api_key="k"), collected)
    with TestClient(app, base_url="http://gpuprices.example.com") as client:
        authorized = client.post(
            "/collections", files=[VAST], headers={"Authorization": "Bearer k"}
        )
        assert authorized.status_code == 200, authorized.text
        assert client.post("/collections", files=[VAST]).status_code == 401
