"""Issue 32's acceptance over HTTP: a drifted replay is flagged in /quality, /metrics, /providers
and the page; an injected $0.02 H100 is flagged by offer_id and held out of offers, quotes and
metrics until a second run confirms it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.pipeline.alerts.receiver import H100_OFFER_ID as H100_VAST_ID
from tests.pipeline.alerts.receiver import vast_bundles

H100_OFFER_ID = str(H100_VAST_ID)

NEW_NAME = "RTX PRO 9000 Rubin"


def collect_lambda(warehouse) -> None:
    """Lambda's H100s: the other providers' offers a Vast.ai price is compared with."""
    replay = {"lambda": FIXTURES / "lambda_instance_types.json"}
    run_collection(["lambda"], warehouse, replays=replay, observed_at=OBSERVED_AT,
                   env={"LAMBDA_API_KEY": "k"})  # fmt: skip


def drifted_vast(tmp_path: Path) -> Path:
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    for offer in body["offers"]:
        offer["geo_location"] = offer.pop("geolocation", None)
    body["offers"][0]["gpu_name"] = NEW_NAME
    path = tmp_path / "vast-drifted.json"
    path.write_bytes(orjson.dumps(body))
    return path


def client_after(warehouse, db_path, *replays: Path) -> TestClient:
    for hour, path in enumerate(replays):
        run_collection(["vastai"], warehouse, replays={"vastai": path},
                       observed_at=OBSERVED_AT + timedelta(hours=hour))  # fmt: skip
    settings = Settings(db=db_path, scheduler=False, providers=["vastai"])
    return TestClient(create_app(settings, warehouse))


@pytest.fixture
def drifted(warehouse, db_path, tmp_path):
    with client_after(warehouse, db_path, FIXTURES / "vastai_bundles.json",
                      drifted_vast(tmp_path)) as client:  # fmt: skip
        yield client


def test_a_renamed_field_and_a_new_gpu_name_are_flagged_in_quality(drifted):
    [vast] = drifted.get("/quality").json()["providers"]
    assert vast["health"] == "degraded" and vast["drift"] == 2
    assert [u["gpu_raw"] for u in vast["unknown_gpus"]] == [NEW_NAME]
    assert vast["unknown_gpus"][0]["example_offer_id"]
    assert vast["runs"][0]["fields_added"] == ["offers[].geo_location"]
    assert vast["runs"][0]["fields_missing"] == ["offers[].geolocation"]
    assert [r["health"] for r in vast["runs"]] == ["degraded", "ok"]
    assert vast["resolved_share"] < vast["runs"][1]["resolved_share"] == 1.0


def test_quality_since_keeps_only_the_runs_observed_from_then(drifted):
    since = (OBSERVED_AT + timedelta(minutes=30)).isoformat()
    [vast] = drifted.get("/quality", params={"since": since}).json()["providers"]
    assert len(vast["runs"]) == 1


def test_quality_refuses_an_unknown_provider_and_a_bad_time(drifted):
    assert drifted.get("/quality", params={"provider": "nope"}).status_code in (400, 404, 422)
    answer = drifted.get("/quality", params={"since": "yesterday-ish"})
    assert answer.status_code == 422


def test_metrics_carry_resolved_share_unknown_names_and_drift_per_provider(drifted):
    text = drifted.get("/metrics").text
    assert 'gpuprices_provider_unknown_gpu_names{provider="vastai"} 1.0' in text
    assert 'gpuprices_provider_shape_drift{provider="vastai"} 2.0' in text
    assert 'gpuprices_provider_degraded{provider="vastai"} 1.0' in text
    assert 'gpuprices_provider_resolved_share{provider="vastai"} 0.84' in text


def test_providers_and_the_page_show_the_unknown_gpus_badge_linking_to_the_details(drifted):
    [vast] = [p for p in drifted.get("/providers").json()["providers"] if p["provider"] == "vastai"]
    assert (vast["health"], vast["unknown_names"], vast["drift"]) == ("degraded", 1, 2)
    page = drifted.get("/").text
    assert '<a class="flag badge-unknown" href="/quality?provider=vastai">1 unknown GPU</a>' in page
    assert "answer changed: 2 fields" in page


H100_JOB = {"model": "Llama-3.1-8B", "method": "lora", "tokens": "10M"}


def test_an_injected_two_cent_h100_is_flagged_and_held_out_of_every_answer(
    warehouse, db_path, tmp_path
):
    collect_lambda(warehouse)
    with client_after(warehouse, db_path, vast_bundles(tmp_path, 0.02)) as client:
        [vast] = [
            p for p in client.get("/quality").json()["providers"] if p["provider"] == "vastai"
        ]
        [flagged] = vast["flagged_offers"]
        assert (flagged["offer_id"], flagged["side"], flagged["suspect"]) == (
            H100_OFFER_ID, "low", True)  # fmt: skip
        assert flagged["price_per_gpu_hour"] == pytest.approx(0.02)
        quotes = client.post("/quotes", json={**H100_JOB, "gpu": "H100-80GB"}).json()["quotes"]
        assert quotes and all(q["offer"]["offer_id"] != H100_OFFER_ID for q in quotes)
        on_demand = {"gpu": "H100-80GB", "pricing": "on_demand"}
        listed = client.get("/offers", params=on_demand).json()["offers"]
        assert listed and H100_OFFER_ID not in {o["offer_id"] for o in listed}
        assert min(o["price_per_gpu_hour"] for o in listed) > 1  # the cheapest is a real one
        lowest = [
            line
            for line in client.get("/metrics").text.splitlines()
            if line.startswith("gpuprices_lowest_price_per_gpu_hour_usd{")
            and 'gpu="H100-80GB"' in line
        ]
        assert lowest and all(float(line.rsplit(" ", 1)[1]) > 1 for line in lowest)


def test_a_low_price_seen_in_two_runs_in_a_row_is_quoted(warehouse, db_path, tmp_path):
    cheap = vast_bundles(tmp_path, 0.02)
    collect_lambda(warehouse)
    with client_after(warehouse, db_path, cheap, cheap) as client:
        [vast] = [
            p for p in client.get("/quality").json()["providers"] if p["provider"] == "vastai"
        ]
        assert [o["suspect"] for o in vast["flagged_offers"]] == [False]
        quotes = client.post("/quotes", json={**H100_JOB, "gpu": "H100-80GB"}).json()["quotes"]
        assert quotes[0]["offer"]["offer_id"] == H100_OFFER_ID
        on_demand = {"gpu": "H100-80GB", "pricing": "on_demand"}
        listed = client.get("/offers", params=on_demand).json()["offers"]
        assert listed[0]["offer_id"] == H100_OFFER_ID  # confirmed: the cheapest again
