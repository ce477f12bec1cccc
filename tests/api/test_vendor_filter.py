"""`vendor=amd` (`--vendor amd`): one declared filter, honoured by the API and the CLI over
recorded answers that list AMD (MI300X) and NVIDIA GPUs; a bad vendor names the allowed ones."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app
from api.mcp import tool_list
from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL, OBSERVED_AT, fill_from, module_template

REPLAYS = {
    "crusoe": FIXTURES / "crusoe_pricing.html",
    "digitalocean": FIXTURES / "digitalocean_pricing.html",
    "hotaisle": FIXTURES / "hotaisle_pricing.html",
    "vultr": FIXTURES / "vultr_plans.json",
    "nebius": FIXTURES / "nebius_prices.html",
}
"""Four providers that list MI300X beside NVIDIA GPUs, and Nebius's European regions."""
EVERYTHING = {"include_unavailable": "true", "limit": 10_000}
runner = CliRunner()


def vendor_of(gpu: str) -> str:
    return get_catalog().variants_of(gpu)[0].vendor.lower()


def collect_replays(warehouse, _folder) -> None:
    run_collection(list(REPLAYS), warehouse, replays=REPLAYS, now=lambda: OBSERVED_AT)


market = module_template(collect_replays)
"""The recorded answers of REPLAYS, collected once for the module."""


@pytest.fixture
def market_db(warehouse, db_path, market):
    fill_from(warehouse, market)
    return db_path


@pytest.fixture
def client(warehouse, market_db):
    settings = Settings(db=market_db, scheduler=False)
    with TestClient(create_app(settings, warehouse), base_url=LOOPBACK_URL) as test_client:
        yield test_client


def api_offers(client: TestClient, **params: object) -> list[dict]:
    response = client.get("/offers", params={**EVERYTHING, **params})
    assert response.status_code == 200, response.text
    return response.json()["offers"]


def test_vendor_amd_lists_only_amd_gpus_and_every_one_of_them(client):
    every = api_offers(client)
    assert {vendor_of(o["gpu"]) for o in every if o["gpu"]} == {"amd", "nvidia"}
    amd = api_offers(client, vendor="amd")
    assert amd and {o["gpu"] for o in amd} >= {"MI300X"}
    assert {o["vendor"] for o in amd} == {"amd"}
    assert {vendor_of(o["gpu"]) for o in amd} == {"amd"}
    assert {o["provider"] for o in amd} >= {"crusoe", "digitalocean", "hotaisle", "vultr"}
    wanted = sorted(o["offer_id"] for o in every if o["gpu"] and vendor_of(o["gpu"]) == "amd")
    assert sorted(o["offer_id"] for o in amd) == wanted
    nvidia = api_offers(client, vendor="NVIDIA")
    assert nvidia and {o["vendor"] for o in nvidia} == {"nvidia"}
    assert len(amd) + len(nvidia) == len([o for o in every if o["gpu"]])
    assert api_offers(client, vendor="intel") == []


def test_vendor_and_jurisdiction_together_answer_even_when_empty(client):
    eea = api_offers(client, jurisdiction="eea")
    assert eea and all(o["eea"] for o in eea)
    amd_eea = api_offers(client, vendor="amd", jurisdiction="eea")
    assert amd_eea == [o for o in eea if o["vendor"] == "amd"]
    nvidia_eea = api_offers(client, vendor="nvidia", jurisdiction="eea")
    assert nvidia_eea and all(o["eea"] and o["vendor"] == "nvidia" for o in nvidia_eea)


def test_a_vendor_the_filter_does_not_know_is_a_422_naming_the_allowed_ones(client):
    response = client.get("/offers", params={"vendor": "arm"})
    assert response.status_code == 422
    assert all(name in response.text for name in ("'nvidia'", "'amd'", "'intel'"))


def cli_offers(db_path, *args: str):
    return runner.invoke(app, ["offers", *args, "--format", "json", "--db", str(db_path)])


def test_cli_vendor_amd_gives_only_amd_gpus(market_db):
    result = cli_offers(market_db, "--vendor", "amd", "--include-unavailable")
    assert result.exit_code == 0, result.output
    offers = json.loads(result.stdout)["offers"]
    assert offers and {vendor_of(o["gpu"]) for o in offers} == {"amd"}
    assert {o["provider"] for o in offers} >= {"crusoe", "digitalocean", "hotaisle", "vultr"}


def test_cli_vendor_with_the_eea_jurisdiction_answers(market_db):
    result = cli_offers(market_db, "--vendor", "amd", "--jurisdiction", "eea")
    assert result.exit_code == 0, result.output
    assert all(o["eea"] and o["vendor"] == "amd" for o in json.loads(result.stdout)["offers"])


def test_cli_bad_vendor_is_a_usage_error_naming_the_allowed_values(market_db):
    result = cli_offers(market_db, "--vendor", "arm")
    assert result.exit_code == 2
    assert "--vendor" in result.output and "'amd'" in result.output
    assert "Traceback" not in result.output


def test_the_page_form_has_the_vendor_filter_and_narrows_the_table_by_it(client):
    asked = client.get("/", params={"view": "all", "vendor": "amd", "include_unavailable": "1"})
    assert asked.status_code == 200, asked.text
    page = BeautifulSoup(asked.text, "html.parser")
    assert page.select_one("form.filters input[name=vendor]")["value"] == "amd"
    rows = page.select("#offers-table tbody tr[data-provider]")
    assert rows and {r["data-provider"] for r in rows} >= {"crusoe", "hotaisle", "vultr"}
    assert "MI300X" in asked.text and "H100" not in page.select_one("#offers-table").get_text()
    refused = client.get("/", params={"vendor": "arm"})
    assert refused.status_code == 422
    alert = BeautifulSoup(refused.text, "html.parser").select_one("#gpus .alert.error")
    assert alert is not None, refused.text
    assert "'amd'" in alert.get_text()


def test_the_mcp_offers_tool_takes_the_vendor_with_its_allowed_values(client):
    tools = {t.name: t for t in tool_list(client.app.openapi())}
    vendor = tools["offers"].input_schema["properties"]["vendor"]
    assert {"nvidia", "amd", "intel"} <= set(json.dumps(vendor).replace('"', " ").split())
