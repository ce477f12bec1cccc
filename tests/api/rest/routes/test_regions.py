from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT, fill_from, module_template

REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles_europe.json",
    "lambda": FIXTURES / "lambda_instance_types_europe.json",
    "runpod": FIXTURES / "runpod_sweep.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}
EEA_PLACES = {
    ("vastai", "Bavaria, DE"),
    ("vastai", "Uusimaa, FI"),
    ("vastai", "Oslo, NO"),
    ("vastai", "Mazovia, PL"),
    ("vastai", "Stockholm, SE"),
    ("vastai", "Capital Region, IS"),
    ("lambda", "europe-central-1"),
    ("runpod", "EU-RO-1"),
    ("runpod", "EU-SE-1"),
    ("runpod", "EU-NL-1"),
    ("runpod", "EUR-IS-1"),
    ("runpod", "CZ"),
    ("runpod", "FR"),
    ("runpod", "SE"),
}


def collect_replays(warehouse, _folder) -> None:
    run_collection(list(REPLAYS), warehouse, replays=REPLAYS, now=lambda: OBSERVED_AT)


market = module_template(collect_replays)
"""The recorded answers of REPLAYS, collected once for the module."""


@pytest.fixture
def client(warehouse, db_path, market):
    fill_from(warehouse, market)
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: OBSERVED_AT)) as test_client:
        yield test_client


def places(body):
    return {(o["provider"], o["region"]) for o in body["offers"]}


def test_eea_offers_are_exactly_those_located_in_eea_countries(client):
    body = client.get("/offers", params={"jurisdiction": "eea"}).json()
    assert places(body) == EEA_PLACES
    assert all(o["eea"] is True for o in body["offers"])


def test_the_eu_leaves_out_norway_and_iceland(client):
    body = client.get("/offers", params={"jurisdiction": "eu"}).json()
    assert places(body) == EEA_PLACES - {
        ("vastai", "Oslo, NO"),
        ("vastai", "Capital Region, IS"),
        ("runpod", "EUR-IS-1"),
    }


def test_a_country_filter_keeps_that_country(client):
    body = client.get("/offers", params={"country": "NO"}).json()
    assert places(body) == {("vastai", "Oslo, NO")}
    assert {
        o["country"] for o in client.get("/offers", params={"country": "de,pl"}).json()["offers"]
    } == {"DE", "PL"}


def test_coreweave_europe_is_continent_europe_but_never_eea(client):
    body = client.get("/offers", params={"continent": "Europe", "provider": "coreweave"}).json()
    assert body["count"] > 0
    assert {(o["country"], o["eea"]) for o in body["offers"]} == {(None, None)}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"country": "XX"}, "ISO 3166-1"),
        ({"jurisdiction": "mars"}, "'eea' or 'eu'"),
        ({"continent": "Mars"}, "Europe"),
    ],
)
def test_bad_location_values_are_422_naming_the_choices(client, params, message):
    response = client.get("/offers", params=params)
    assert response.status_code == 422 and message in response.text


def test_regions_list_each_location_with_why(client):
    regions = {(r["provider"], r["region"]): r for r in client.get("/regions").json()["regions"]}
    assert regions[("lambda", "europe-central-1")]["country"] == "DE"
    assert regions[("runpod", "EUR-IS-1")]["eea"] is True
    assert regions[("runpod", "EUR-IS-1")]["eu"] is False
    assert regions[("coreweave", "Europe")]["eea"] is None
    assert regions[("vastai", "Oslo, NO")]["offers"] > 0
    assert "ISO 3166-1" in regions[("vastai", "Oslo, NO")]["source"]


def test_history_and_exports_take_the_same_location_filters(client):
    body = client.get(
        "/prices/history",
        params={"gpu": "H100", "jurisdiction": "eea", "since": "2025-12-31T00:00:00Z"},
    ).json()
    assert {s["provider"] for s in body["series"]} == {"vastai", "lambda", "runpod"}
    text = client.get("/export/offers.csv", params={"jurisdiction": "eu"}).text
    assert "Oslo, NO" not in text and "Bavaria, DE" in text


def test_quotes_in_the_eea_rank_only_eea_offers(client):
    response = client.post(
        "/quotes",
        json={
            "model": "Llama-3.1-8B",
            "method": "qlora",
            "tokens": 10_000_000,
            "jurisdiction": "eea",
            "top": 50,
        },
    )
    assert response.status_code == 200, response.text
    quotes = response.json()["quotes"]
    assert quotes and all(q["offer"]["eea"] is True for q in quotes)
