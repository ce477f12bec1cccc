"""AWS and Azure offers beside the marketplaces': spot side by side, places by jurisdiction."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from tests.conftest import FIXTURES

runner = CliRunner()
REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "runpod": FIXTURES / "runpod_sweep.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
    "aws": FIXTURES / "aws_answers",
    "azure": FIXTURES / "azure_answers",
}


@pytest.fixture
def db(db_path):
    args = [arg for name, path in REPLAYS.items() for arg in ("--replay", f"{name}={path}")]
    result = runner.invoke(app, ["collect", *args, "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    return db_path


def offers(db, *args):
    result = runner.invoke(app, ["offers", *args, "--format", "jsonl", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_h100_spot_lists_marketplace_and_hyperscaler_offers_side_by_side_cheapest_first(db):
    found = offers(db, "--gpu", "H100-80GB", "--pricing", "spot")
    providers = {o["provider"] for o in found}
    assert {"aws", "azure"} <= providers and providers - {"aws", "azure"}
    prices = [o["price_per_gpu_hour"] for o in found]
    assert prices == sorted(prices)
    p5 = next(o for o in found if o["offer_id"] == "p5.48xlarge@us-east-1")
    assert p5["price_per_hour"] == pytest.approx(19.4933) and p5["gpu_count"] == 8


def test_eea_lists_frankfurt_and_not_virginia(db):
    regions = {(o["provider"], o["region"]) for o in offers(db, "--jurisdiction", "eea")}
    assert ("aws", "eu-central-1") in regions and ("azure", "westeurope") in regions
    assert ("aws", "us-east-1") not in regions and ("azure", "eastus") not in regions


def test_one_recorded_answer_alone_gives_its_own_kind_of_offers(db_path):
    spot = FIXTURES / "aws_spot.json"
    result = runner.invoke(app, ["collect", "--replay", f"aws={spot}", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert {o["pricing"] for o in offers(db_path, "--gpu", "H100-80GB")} == {"spot"}


def test_providers_and_the_page_list_the_clouds(db):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from pipeline.settings import Settings

    with TestClient(create_app(Settings(db=db, scheduler=False))) as client:
        providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
        page = client.get("/", params={"gpu": "H100-80GB"}).text
    assert providers["aws"]["last_status"] == providers["azure"]["last_status"] == "ok"
    assert "aws" in page and "azure" in page
