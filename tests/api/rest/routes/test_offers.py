from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT


def test_offers_for_a_gpu_are_only_that_gpu_cheapest_per_gpu_hour_first(client):
    body = client.get("/offers", params={"gpu": "A100-80GB"}).json()
    assert body["count"] == len(body["offers"]) == 2
    prices = [o["price_per_gpu_hour"] for o in body["offers"]]
    assert prices == sorted(prices)
    for offer in body["offers"]:
        assert offer["gpu"] == "A100-80GB"
        assert offer["price_per_gpu_hour"] * offer["gpu_count"] == pytest.approx(
            offer["price_per_hour"], abs=0.005
        )
        assert offer["observed_at"] == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize("spelling", ["a100 80gb", "NVIDIA A100-SXM4-80GB"])
def test_any_spelling_of_a_gpu_gives_the_same_answer(client, spelling):
    canonical = client.get("/offers", params={"gpu": "A100-80GB"}).json()["offers"]
    assert client.get("/offers", params={"gpu": spelling}).json()["offers"] == canonical


def test_a_family_includes_every_size(client):
    body = client.get("/offers", params={"gpu": "A100"}).json()
    assert {o["gpu"] for o in body["offers"]} <= {"A100-40GB", "A100-80GB"}
    assert body["count"] == 2


def test_unknown_gpu_is_422_naming_the_closest_ids(client):
    response = client.get("/offers", params={"gpu": "RTX 4090 Z"})
    assert response.status_code == 422
    assert "Unknown GPU 'RTX 4090 Z'; closest: RTX 4090" in response.json()["detail"]


@pytest.mark.parametrize(
    "params",
    [{"pricing": "cheap"}, {"sort": "vram"}, {"max_price_per_gpu": -1}, {"limit": 0}],
)
def test_bad_filters_are_422(client, params):
    response = client.get("/offers", params=params)
    assert response.status_code == 422
    assert response.json()["detail"]


def test_unknown_provider_is_422(client):
    response = client.get("/offers", params={"provider": "nosuchcloud"})
    assert response.status_code == 422
    assert "Unknown provider 'nosuchcloud'" in response.json()["detail"]


def test_filters_combine(client):
    body = client.get(
        "/offers",
        params={"pricing": "spot", "max_price_per_gpu": 0.2, "sort": "price_per_hour"},
    ).json()
    assert body["count"] > 0
    assert all(o["pricing"] == "spot" and o["price_per_gpu_hour"] <= 0.2 for o in body["offers"])
    hourly = [o["price_per_hour"] for o in body["offers"]]
    assert hourly == sorted(hourly)


def test_region_filter_matches_part_of_the_region_text(client):
    body = client.get("/offers", params={"region": "se"}).json()
    assert {o["region"] for o in body["offers"]} == {"Stockholm, SE"}


def test_limit_caps_the_list(client):
    assert client.get("/offers", params={"limit": 3}).json()["count"] == 3


def test_unknown_gpus_are_kept_and_listed(warehouse, db_path, tmp_path):
    body = json.loads((FIXTURES / "vastai_bundles.json").read_text(encoding="utf-8"))
    body["offers"][4]["gpu_name"] = "GTX 980 Ti"  # a real Vast.ai name the catalog lacks
    replay = tmp_path / "vastai.json"
    replay.write_text(json.dumps(body), encoding="utf-8")
    run_collection(["vastai"], warehouse, replays={"vastai": replay}, now=lambda: OBSERVED_AT)
    with TestClient(create_app(Settings(db=db_path, scheduler=False), warehouse)) as client:
        offers = client.get("/offers").json()["offers"]
        assert any(o["gpu"] is None and o["gpu_raw"] == "GTX 980 Ti" for o in offers)
        unknown = client.get("/gpus/unknown").json()
    assert {g["gpu_raw"] for g in unknown["gpus"]} == {"GTX 980 Ti"}


def test_look_alike_names_get_their_own_ids_not_the_card_they_resemble(client):
    by_raw = {o["gpu_raw"]: o["gpu"] for o in client.get("/offers").json()["offers"]}
    assert (by_raw["RTX 4090D"], by_raw["RTX 4090"]) == ("RTX 4090D", "RTX 4090")
    assert by_raw["Q RTX 8000"] == "Quadro RTX 8000"


def test_an_unknown_query_parameter_is_422_naming_it(client):
    response = client.get("/offers", params={"gpus": "H100"})
    assert response.status_code == 422 and "gpus" in response.text


def test_min_gpu_count_keeps_only_offers_with_at_least_that_many(client):
    everything = client.get("/offers").json()["offers"]
    body = client.get("/offers", params={"min_gpu_count": 4}).json()
    assert body["offers"] == [o for o in everything if o["gpu_count"] >= 4]
    assert 0 < body["count"] < len(everything)


def test_the_export_takes_the_same_filters_and_refuses_unknown_ones(client):
    assert client.get("/export/offers.csv", params={"max_age": "1h"}).status_code == 422
    csv = client.get("/export/offers.csv", params={"gpu": "A100-80GB"}).text
    assert (
        len(csv.splitlines())
        == 1 + client.get("/offers", params={"gpu": "A100-80GB"}).json()["count"]
    )
