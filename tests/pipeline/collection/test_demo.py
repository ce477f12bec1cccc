"""The demo: recorded answers shipped with the package, replayed at recent times, labelled."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app as cli
from pipeline.collection.demo import (
    DEMO_MAX_PERCENT,
    DEMO_STEP_PERCENT,
    demo_bodies,
    demo_price_factor,
    demo_rates,
    demo_settings,
    fill_demo,
)
from pipeline.collection.schedule import collect_provider
from pipeline.settings import Settings
from scrapers import sources

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
"""After the date of the ECB rates the demo replays (2026-11-27): EUR prices convert."""


def test_the_demo_replays_every_registered_provider_the_european_clouds_and_the_ecb_rate():
    european = {"scaleway", "ovhcloud", "verda", "hetzner"}
    assert {"ecb", "gcp", *european} <= set(demo_bodies())
    missing = set(sources()) - set(demo_bodies())
    assert not missing, f"add a recorded answer as pipeline/data/demo/<provider>.*: {missing}"


def test_demo_prices_walk_from_the_recording_seeded_and_bounded():
    assert demo_price_factor("vastai", "spot", 0) == 1.0
    walk = [demo_price_factor("vastai", "spot", h) for h in range(49)]
    assert walk == [demo_price_factor("vastai", "spot", h) for h in range(49)], "seeded"
    assert len(set(walk)) > 40, "it moves"
    assert all(abs(f - 1) <= DEMO_MAX_PERCENT / 100 + 1e-12 for f in walk)
    steps = [abs(b / a - 1) for a, b in zip(walk, walk[1:], strict=False)]
    assert max(steps) <= DEMO_STEP_PERCENT["spot"] / 100 + 1e-12
    assert walk != [demo_price_factor("runpod", "spot", h) for h in range(49)]


@pytest.mark.slow
def test_the_demo_has_a_day_of_history_that_moves_ending_now_labelled_as_demo(warehouse, db_path):
    """A day of history, replayed every 4 hours and collected every 4 hours (the demo replays
    each recording every hour, 24 times a day: the same code, six times as long); the chart's
    lines break only past a bucket and 1.5 collection intervals, so 4 hours apart they are
    drawn whole."""
    step = timedelta(hours=4)
    settings = demo_settings(Settings(db=db_path, scheduler=False))
    settings = settings.model_copy(update={"intervals": dict.fromkeys(demo_bodies(), step)})
    reports = fill_demo(
        warehouse, settings, now=lambda: NOW, history=timedelta(hours=24), step=step
    )
    assert len(reports) == 7 * len(demo_bodies()) and {r.status for r in reports} == {"ok"}
    assert {r.observed_at for r in reports} == {NOW - step * back for back in range(7)}
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as web:
        assert web.get("/healthz").json()["demo"] is True
        providers = web.get("/providers").json()
        assert providers["demo"] is True
        assert not any(p["stale"] for p in providers["providers"])
        offers = web.get("/offers").json()
        assert offers["count"] > 50 and not any(o["stale"] for o in offers["offers"])
        assert {"scaleway", "ovhcloud", "verda", "hetzner", "gcp"} <= {
            o["provider"] for o in offers["offers"]
        }
        eea = web.get("/offers", params={"jurisdiction": "eea"}).json()["offers"]
        assert {"scaleway", "ovhcloud", "hetzner"} <= {o["provider"] for o in eea}
        history = web.get(
            "/prices/history", params={"gpu": "H100-80GB", "interval": "1h", "since": "2026-11-30"}
        ).json()
        medians = [{p["median"] for p in s["points"]} for s in history["series"]]
        assert any(len(values) > 1 for values in medians), "some series moves"
        page = BeautifulSoup(web.get("/").text, "html.parser")
    changes = [cell.text.strip() for cell in page.select("td.change")]
    assert any(c not in ("+0.0%", "—") for c in changes), changes
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


def test_the_demo_schedule_replays_every_recording_and_never_fetches(warehouse, db_path):
    settings = demo_settings(Settings(db=db_path, scheduler=False))

    def no_network():
        raise AssertionError("the demo fetched instead of replaying")

    statuses = {}
    for name in sorted(demo_bodies(), key=lambda n: n != "ecb"):  # the rates first, as run
        stop = threading.Event()
        done = collect_provider(name, warehouse, settings, stop, no_network, lambda: NOW)
        statuses.update({r.provider: (r.status, r.error) for r in done.reports})
    assert statuses == dict.fromkeys(demo_bodies(), ("ok", None))


def test_demo_rates_are_dated_on_the_replay_day_whatever_the_recording_date():
    recorded = [(date(2026, 11, 26), "USD", 1.05), (date(2026, 11, 27), "USD", 1.06)]
    replayed = demo_rates(recorded, datetime(2027, 3, 1, 12, tzinfo=UTC))
    assert replayed == [(date(2027, 2, 28), "USD", 1.05), (date(2027, 3, 1), "USD", 1.06)]
