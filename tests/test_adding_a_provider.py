"""A provider is a module: one written to a temporary folder and registered (what its one line in
`scrapers.MODULES` does) gets its default interval, its places, a row in `gpuprices providers`
and a collection through the normal path, with no other file edited."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from textwrap import dedent
from types import ModuleType

import pytest
from typer.testing import CliRunner

import scrapers
from api.cli.commands import app
from pipeline.location import get_locator
from pipeline.settings import Settings
from scrapers.registry import source_of

runner = CliRunner()

MODULE = dedent(
    '''
    """Acme GPU: a price list at one JSON endpoint (a provider written for the registry test)."""

    from __future__ import annotations

    from datetime import datetime, timedelta

    import httpx
    import orjson

    from scrapers.base import Credentials, fetch_bytes
    from scrapers.batch import OfferBatch
    from scrapers.models import ParseResult, Pricing, json_raw, reason_of

    NAME = "acmegpu"
    URL = "https://api.acme-gpu.example/v1/prices"
    ENV_KEY = "ACMEGPU_API_KEY"
    KEY_REQUIRED = False
    INTERVAL = timedelta(minutes=30)  # a price list, changed a few times a day
    CURRENCY = "USD"
    LISTED_ONLY = True


    def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
        return fetch_bytes(client, "GET", URL, provider=NAME)


    def parse(payload: bytes, observed_at: datetime) -> ParseResult:
        records = orjson.loads(payload)
        batch = OfferBatch(
            NAME, observed_at, raw_of=lambda i: json_raw(records[i]),
            id_of=lambda i: records[i].get("id"),
        )
        for i, record in enumerate(records):
            try:
                batch.add(i, [{
                    "offer_id": record["id"],
                    "gpu_raw": record["gpu"],
                    "gpu_count": record["gpus"],
                    "pricing": Pricing.ON_DEMAND,
                    "price_per_hour": record["usd_per_hour"],
                    "region": record["region"],
                    "available": True,
                }])
            except KeyError as exc:
                batch.reject(i, reason_of(exc))
        return batch.finish()
    '''
)
REGIONS = "region,country,continent,source\nams-1,NL,,Acme region list (Amsterdam)\n"
ANSWER = [
    {"id": "h100x8-ams", "gpu": "H100 SXM5 80GB", "gpus": 8, "usd_per_hour": 20.0,
     "region": "ams-1"},
    {"id": "broken", "gpu": "A100 80GB", "gpus": 1, "region": "ams-1"},
]  # fmt: skip


@pytest.fixture
def acmegpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The module and its regions file in a package of their own, imported and registered."""
    package = tmp_path / "acmeproviders"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "acmegpu.py").write_text(MODULE)
    (package / "data" / "acmegpu_regions.csv").write_text(REGIONS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("acmeproviders.acmegpu")
    monkeypatch.setitem(scrapers.PROVIDERS, module.NAME, source_of(module))
    yield module
    for name in ("acmeproviders.acmegpu", "acmeproviders"):
        sys.modules.pop(name, None)


def test_a_registered_module_gets_its_default_interval_and_is_collected_by_default(acmegpu):
    settings = Settings()
    assert settings.interval("acmegpu") == timedelta(minutes=30)
    assert "acmegpu" in settings.providers
    assert Settings(intervals={"acmegpu": "5m"}).interval("acmegpu") == timedelta(minutes=5)


def test_a_registered_module_places_its_regions_from_its_own_data_file(acmegpu):
    place = get_locator().locate("acmegpu", "ams-1")
    assert (place.country, place.continent, place.eea, place.eu) == ("NL", "Europe", True, True)
    assert place.source == "Acme region list (Amsterdam)"


def test_a_module_no_longer_registered_has_no_places(acmegpu, monkeypatch):
    monkeypatch.delitem(scrapers.PROVIDERS, "acmegpu")
    assert get_locator().locate("acmegpu", "ams-1").country is None


def test_a_registered_module_is_listed_by_gpuprices_providers(acmegpu):
    result = runner.invoke(app, ["providers", "--format", "json"])
    assert result.exit_code == 0, result.output
    [row] = [p for p in json.loads(result.stdout)["providers"] if p["name"] == "acmegpu"]
    assert row == {
        "name": "acmegpu",
        "kind": "offers",
        "endpoint": "https://api.acme-gpu.example/v1/prices",
        "key_variable": "ACMEGPU_API_KEY",
        "key_required": False,
        "interval_s": 1800,
        "currency": "USD",
        "regions_placed": 1,
        "listed_only": True,
        "in_price_index": True,
        "configured": True,  # its key is optional
    }
    markdown = runner.invoke(app, ["providers", "--format", "markdown"]).stdout
    assert "| acmegpu | `https://api.acme-gpu.example/v1/prices` |" in markdown


def test_a_registered_module_is_collected_from_a_replay_and_its_offers_are_placed(
    acmegpu, tmp_path, db_path
):
    answer = tmp_path / "acmegpu.json"
    answer.write_text(json.dumps(ANSWER))
    collected = runner.invoke(
        app, ["collect", "--replay", f"acmegpu={answer}", "--at", "1h", "--db", str(db_path)]
    )
    assert collected.exit_code == 0, collected.output
    assert "rejected acmegpu record broken: missing field 'usd_per_hour'" in collected.output
    listed = runner.invoke(
        app, ["offers", "--provider", "acmegpu", "--format", "json", "--db", str(db_path)]
    )
    assert listed.exit_code == 0, listed.output
    [offer] = json.loads(listed.stdout)["offers"]
    assert (offer["offer_id"], offer["gpu"], offer["gpu_count"]) == ("h100x8-ams", "H100-80GB", 8)
    assert offer["price_per_gpu_hour"] == pytest.approx(2.5)
    assert (offer["country"], offer["eea"]) == ("NL", True)
