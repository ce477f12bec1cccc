from __future__ import annotations

from datetime import timedelta

import httpx
import orjson
import pytest
import respx
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from scrapers import lambdalabs
from tests.conftest import FIXTURES, OBSERVED_AT, Clock, fixture_bytes


@pytest.fixture
def clock():
    return Clock(OBSERVED_AT + timedelta(minutes=5))


@pytest.fixture
def app_client(collected, db_path, clock):
    settings = Settings(db=db_path, scheduler=False, providers=["vastai", "lambda"])
    with TestClient(create_app(settings, collected, clock=clock)) as client:
        yield client


def test_offers_carry_each_providers_observed_time_and_staleness(app_client, clock):
    body = app_client.get("/offers").json()
    [vast] = [p for p in body["providers"] if p["provider"] == "vastai"]
    assert vast["observed_at"] == "2026-01-01T00:00:00Z" and vast["stale"] is False
    assert all(o["stale"] is False for o in body["offers"])
    clock.now = OBSERVED_AT + timedelta(minutes=31)
    body = app_client.get("/offers").json()
    assert body["count"] == 13  # stale data is still served, and said to be stale
    assert all(o["stale"] for o in body["offers"])


def test_max_age_leaves_out_providers_older_than_that(app_client, clock):
    clock.now = OBSERVED_AT + timedelta(hours=1)
    assert app_client.get("/offers", params={"max_age": "2h"}).json()["count"] == 13
    body = app_client.get("/offers", params={"max_age": "30m"}).json()
    assert body == {"offers": [], "count": 0, "providers": []}


def test_a_bad_max_age_is_422(app_client):
    response = app_client.get("/offers", params={"max_age": "soonish"})
    assert response.status_code == 422 and "max_age" in response.json()["detail"]


def test_providers_shows_last_run_success_and_error(app_client, collected, tmp_path, clock):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    later = OBSERVED_AT + timedelta(minutes=10)
    run_collection(["vastai"], collected, replays={"vastai": bad}, now=lambda: later)
    run_collection(["lambda"], collected, env={}, now=lambda: later)
    clock.now = later
    providers = {p["provider"]: p for p in app_client.get("/providers").json()["providers"]}
    vast = providers["vastai"]
    assert vast["last_status"] == "failed" and "offers" in vast["last_error"]
    assert vast["stale"] and vast["offer_count"] == 13
    assert vast["observed_at"] == "2026-01-01T00:00:00Z"
    assert vast["interval_seconds"] == 600
    lam = providers["lambda"]
    assert lam["last_status"] == "failed" and "LAMBDA_API_KEY is not set" in lam["last_error"]
    assert lam["observed_at"] is None and lam["offer_count"] == 0


def test_quality_lists_quarantined_records_with_reason_and_raw(app_client, collected, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    body["offers"][0]["gpu_ram"] = 81  # GB where MiB is expected: a unit mix-up
    path = tmp_path / "unit.json"
    path.write_bytes(orjson.dumps(body))
    run_collection(["vastai"], collected, replays={"vastai": path})
    quality = app_client.get("/quality").json()
    [record] = quality["records"]
    assert record["record_id"] == "24581137" and "vram_gb" in record["reason"]
    assert '"gpu_ram":81' in record["raw"]
    assert quality["latest"] == [
        {"provider": "vastai", "records": 1, "last_observed_at": record["observed_at"]}
    ]


def test_quality_for_an_unknown_provider_is_422(app_client):
    assert app_client.get("/quality", params={"provider": "nosuchcloud"}).status_code == 422


def test_readyz_without_scheduler_is_ready_with_provider_freshness(app_client):
    body = app_client.get("/readyz").json()
    assert body["ready"] and body["database"] and body["scheduler"] == "disabled"
    assert {p["provider"] for p in body["providers"]} == {"vastai", "lambda"}


@respx.mock(assert_all_mocked=True)
def test_secrets_are_never_returned(db_path, collected, monkeypatch, respx_mock):
    monkeypatch.setenv("LAMBDA_API_KEY", "sk-do-not-leak")
    respx_mock.get(lambdalabs.URL).mock(
        return_value=httpx.Response(200, content=fixture_bytes("lambda_instance_types.json"))
    )
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, collected)) as client:
        run_collection(["lambda"], collected, env={"LAMBDA_API_KEY": "sk-do-not-leak"})
        assert respx_mock.calls.call_count == 1
        for path in ("/providers", "/readyz", "/offers", "/quality", "/openapi.json"):
            assert "sk-do-not-leak" not in client.get(path).text


def test_providers_reports_google_cloud_and_oracle_after_their_replays(collected, db_path, clock):
    replays = {"gcp": FIXTURES / "gcp_skus", "oci": FIXTURES / "oci_products.json"}
    run_collection(list(replays), collected, replays=replays, now=lambda: OBSERVED_AT)
    with TestClient(create_app(Settings(db=db_path, scheduler=False), collected,
                               clock=clock)) as client:  # fmt: skip
        providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
    assert {"gcp", "oci"} <= set(providers)
    assert providers["gcp"]["offer_count"] > 0 and providers["oci"]["offer_count"] > 0
