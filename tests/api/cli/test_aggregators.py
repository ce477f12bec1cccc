"""Aggregators from the CLI and the API: their offers with availability and seller, the seller
filter, and "not configured" (never degraded) without a key; the key shown nowhere."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL
from warehouse import Warehouse

runner = CliRunner()
KEYS = {"SHADEFORM_API_KEY": "sf-secret-0123", "PRIME_API_KEY": "pi-secret-4567"}
RECORDINGS = {
    "shadeform": FIXTURES / "shadeform_instance_types.json",
    "primeintellect": FIXTURES / "primeintellect_availability_gpus.json",
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def collected(db_path, monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    replays = [a for name, path in RECORDINGS.items() for a in ("--replay", f"{name}={path}")]
    result = invoke("collect", *replays, "--db", db_path)
    assert result.exit_code == 0, result.output
    return db_path


def offers_json(db_path, *args):
    result = invoke("offers", "--db", db_path, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["offers"]


def test_with_its_key_and_answer_replayed_each_aggregator_lists_offers_with_availability(
    collected,
):
    for name in RECORDINGS:
        offers = offers_json(collected, "--provider", name, "--include-unavailable")
        assert offers and {o["provider"] for o in offers} == {name}
        assert {o["available"] for o in offers} == {True, False}
        assert all(o["seller"] for o in offers)
    table = invoke("offers", "--db", collected, "--provider", "shadeform", "--include-unavailable")
    assert table.exit_code == 0 and "35 offers" in table.output


def test_seller_lambda_finds_the_lambda_h100_sold_through_an_aggregator(collected):
    offers = offers_json(collected, "--gpu", "H100-80GB", "--seller", "lambda")
    assert {(o["provider"], o["seller"], o["gpu"]) for o in offers} == {
        ("primeintellect", "lambda", "H100-80GB")
    }
    table = invoke("offers", "--db", collected, "--gpu", "H100-80GB", "--seller", "lambda")
    assert table.exit_code == 0 and "primeintellect" in table.output
    assert "via lambda" in table.output


def test_seller_names_are_case_blind_and_several_may_be_given(collected):
    offers = offers_json(collected, "--seller", "LAMBDA,hyperstack", "--include-unavailable")
    assert {o["seller"] for o in offers} == {"lambda", "hyperstack"}
    assert {o["provider"] for o in offers} == {"shadeform", "primeintellect"}


def test_a_seller_no_offer_carries_finds_nothing_and_says_how_to_widen(collected):
    result = invoke("offers", "--db", collected, "--seller", "nobody")
    assert result.exit_code == 0 and "No offers match" in result.output


def test_the_api_serves_the_seller_and_filters_on_it_and_never_shows_a_key(collected):
    with (
        Warehouse.open(collected) as warehouse,
        TestClient(
            create_app(Settings(db=collected, scheduler=False), warehouse), base_url=LOOPBACK_URL
        ) as client,
    ):
        page = client.get("/offers", params={"seller": "lambda", "gpu": "H100-80GB"}).json()
        assert page["count"] == 2 and {o["seller"] for o in page["offers"]} == {"lambda"}
        everything = client.get("/offers", params={"include_unavailable": "true"}).json()
        assert {o["seller"] is None for o in everything["offers"]} == {False}
        texts = [client.get(path).text for path in ("/providers", "/metrics", "/quality")]
        texts.append(client.get("/offers", params={"seller": "nope!"}).text)
    for text in texts:
        assert not any(key in text for key in KEYS.values())


def test_without_a_key_providers_say_not_configured_and_quality_no_degradation(
    db_path, monkeypatch
):
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    table = invoke("providers")
    rows = [line for line in table.output.splitlines() if "API_KEY" in line]
    assert any("SHADEFORM_API_KEY" in r for r in rows) and any("PRIME_API_KEY" in r for r in rows)
    assert table.output.count("(not configured)") >= 2
    facts = json.loads(invoke("providers", "--format", "json").output)["providers"]
    configured = {f["name"]: f["configured"] for f in facts}
    assert configured["shadeform"] is False and configured["primeintellect"] is False
    result = invoke("collect", "--provider", "shadeform", "--provider", "primeintellect",
                    "--db", db_path)  # fmt: skip
    assert result.exit_code == 1 and "shadeform: failed" in result.output
    quality = json.loads(invoke("quality", "--db", db_path, "--format", "json").output)
    health = {p["provider"]: p["health"] for p in quality["providers"]}
    assert health == {"shadeform": "not_configured", "primeintellect": "not_configured"}


def test_a_key_given_in_the_settings_file_configures_its_provider(tmp_path, monkeypatch):
    monkeypatch.delenv("SHADEFORM_API_KEY", raising=False)
    config = tmp_path / "gpuprices.toml"
    config.write_text('[api_keys]\nSHADEFORM_API_KEY = "sf-from-file"\n')
    result = invoke("providers", "--format", "json", "--config", config)
    facts = {f["name"]: f for f in json.loads(result.output)["providers"]}
    assert facts["shadeform"]["configured"] is True
    assert facts["primeintellect"]["configured"] is False
    assert "sf-from-file" not in result.output
