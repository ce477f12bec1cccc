"""The demo: recorded answers shipped with the package, replayed at recent times, labelled."""

from __future__ import annotations

from datetime import timedelta

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app as cli
from pipeline.collection.demo import demo_bodies, demo_settings, fill_demo
from pipeline.settings import Settings
from scrapers import PROVIDERS
from tests.conftest import OBSERVED_AT


def test_the_package_ships_a_recorded_answer_of_the_four_original_providers():
    assert {"vastai", "runpod", "lambda", "coreweave"} <= set(demo_bodies()) <= set(PROVIDERS)


def test_the_demo_has_hourly_history_ending_now_labelled_as_demo(warehouse, db_path):
    settings = demo_settings(Settings(db=db_path, scheduler=False))
    reports = fill_demo(warehouse, settings, now=lambda: OBSERVED_AT, history=timedelta(hours=3))
    assert len(reports) == 4 * len(demo_bodies()) and {r.status for r in reports} == {"ok"}
    with TestClient(create_app(settings, warehouse, clock=lambda: OBSERVED_AT)) as web:
        assert web.get("/healthz").json()["demo"] is True
        providers = web.get("/providers").json()
        assert providers["demo"] is True
        assert not any(p["stale"] for p in providers["providers"])
        offers = web.get("/offers").json()
        assert offers["count"] > 50 and not any(o["stale"] for o in offers["offers"])
        page = BeautifulSoup(web.get("/").text, "html.parser")
    assert "Demo data" in page.select_one("#demo-banner").text
    assert page.select("#chart .series path"), "the chart draws lines"
    assert page.select("#quotes tbody tr"), "the page quotes the default workload"
    assert page.select_one("#no-data") is None


def test_a_real_server_is_not_labelled_demo(warehouse, db_path):
    with TestClient(create_app(Settings(db=db_path, scheduler=False), warehouse)) as web:
        assert web.get("/healthz").json()["demo"] is False
        assert web.get("/").text.count("demo-banner") == 0


def test_gpuprices_demo_builds_its_own_database(tmp_path):
    db = tmp_path / "data" / "demo.duckdb"
    result = CliRunner().invoke(cli, ["demo", "--build-only", "--history", "1h", "--db", str(db)])
    assert result.exit_code == 0, result.output
    # every recorded provider, two hourly replays each (an hour ago and now)
    assert f"demo ready: {2 * len(demo_bodies())} runs" in " ".join(result.output.split())
    offers = CliRunner().invoke(cli, ["offers", "--gpu", "H100", "--db", str(db)])
    assert offers.exit_code == 0 and "STALE" not in offers.output


def test_the_demo_never_overwrites_a_real_database(tmp_path):
    real = tmp_path / "gpuprices.duckdb"
    real.write_bytes(b"precious")
    result = CliRunner().invoke(cli, ["demo", "--build-only", "--db", str(real)])
    assert result.exit_code == 1 and "is not a demo database" in result.output
    assert real.read_bytes() == b"precious"
