"""European clouds priced in USD from the ECB's euro rates (issue 23), from recorded answers."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.collection.schedule import Collector
from pipeline.market.freshness import provider_freshness
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from pipeline.workload.ranking import job_cost_usd, rank_offers
from scrapers import sources
from tests.conftest import FIXTURES, module_template, open_copy
from tests.pipeline.workload.test_model import QLORA_70B

AT = datetime(2026, 11, 30, 12, tzinfo=UTC)
USD_PER_EUR = 1.1602  # ecb_eurofxref_daily.xml, 2026-11-27
REPLAYS = {
    "ecb": FIXTURES / "ecb_eurofxref_daily.xml",
    "scaleway": FIXTURES / "scaleway_answers",
    "ovhcloud": FIXTURES / "ovhcloud_catalog_fr.json",
    "verda": FIXTURES / "verda_pricing.html",
    "hetzner": FIXTURES / "hetzner_live_data_prices.json",
}
EUROPEANS = ["scaleway", "ovhcloud", "verda", "hetzner"]


def collect(warehouse, names, at=AT, **replays):
    return {
        r.provider: r
        for r in run_collection(names, warehouse, observed_at=at, replays={**REPLAYS, **replays})
    }


def current(warehouse):
    with warehouse.cursor() as cur:
        rows = cur.execute("SELECT * FROM current_offers ORDER BY provider, offer_id").fetchall()
        columns = [d[0] for d in cur.description]
    return {(r["provider"], r["offer_id"], r["pricing"]): r for r in
            (dict(zip(columns, row, strict=True)) for row in rows)}  # fmt: skip


def collect_europeans(warehouse, folder):
    reports = collect(warehouse, ["ecb", *EUROPEANS])
    assert {name: r.status for name, r in reports.items()} == dict.fromkeys(
        ["ecb", *EUROPEANS], "ok"
    )


europeans = module_template(collect_europeans)
"""The rate and the European clouds, collected once for the module."""


@pytest.fixture
def collected(europeans, db_path):
    """The collected rate and European clouds, in a database of the test's own at `db_path`."""
    with open_copy(europeans, db_path) as wh:
        yield wh


def test_the_rate_source_is_an_ok_run_with_no_offers_and_its_rates_stored(warehouse):
    [report] = run_collection(["ecb"], warehouse, replays={"ecb": REPLAYS["ecb"]})
    assert (report.status, report.offer_count, report.error) == ("ok", 0, None)


def test_euro_prices_become_usd_with_the_replayed_ecb_rate_to_the_cent(collected):
    offers = current(collected)
    pcie = offers[("scaleway", "H100-1-80G@fr-par-2", "on_demand")]
    assert (pcie["gpu"], pcie["form_factor"], pcie["gpu_count"]) == ("H100-80GB", "PCIe", 1)
    assert (pcie["currency"], pcie["price_per_hour_native"]) == ("EUR", 2.73)
    assert round(pcie["price_per_hour"], 2) == round(2.73 * USD_PER_EUR, 2) == 3.17
    assert (pcie["fx_rate"], pcie["fx_date"]) == (USD_PER_EUR, date(2026, 11, 27))
    assert (pcie["available"], pcie["country"], pcie["eu"]) == (True, "FR", True)
    sxm = offers[("scaleway", "H100-SXM-8-80G@fr-par-2", "on_demand")]
    assert (sxm["form_factor"], sxm["gpu_count"], sxm["available"]) == ("SXM", 8, False)
    assert round(sxm["price_per_gpu_hour"], 2) == round(23.028 / 8 * USD_PER_EUR, 2)
    b300 = offers[("scaleway", "B300-SXM-4-288G@fr-par-2", "on_demand")]
    assert (b300["gpu"], b300["gpu_count"]) == ("B300", 4)
    assert offers[("scaleway", "L4-1-24G@pl-waw-2", "on_demand")]["country"] == "PL"


def test_ovhcloud_flavors_are_whole_and_placed_where_the_catalog_says(collected):
    offers = current(collected)
    gra = offers[("ovhcloud", "h100-380@GRA11", "on_demand")]
    assert (gra["gpu"], gra["country"], gra["price_per_hour_native"]) == ("H100-80GB", "FR", 2.8)
    assert round(gra["price_per_hour"], 2) == 3.25
    assert offers[("ovhcloud", "h100-380@BHS5", "on_demand")]["country"] == "CA"
    unplaced = offers[("ovhcloud", "h100-1520", "on_demand")]
    assert (unplaced["gpu_count"], unplaced["country"], unplaced["eea"]) == (4, None, None)
    assert offers[("ovhcloud", "t1-le-45", "on_demand")]["gpu"] == "V100-16GB"


def test_verda_usd_prices_stay_as_published_in_the_eea_country_unknown(collected):
    offers = current(collected)
    h100 = offers[("verda", "1x H100 SXM5 80GB", "spot")]
    assert (h100["gpu"], h100["price_per_gpu_hour"], h100["currency"]) == ("H100-80GB", 1.15, "USD")
    assert (h100["fx_rate"], h100["price_per_hour_native"]) == (None, 1.15)
    assert (h100["country"], h100["eea"], h100["eu"]) == (None, True, None)
    assert offers[("verda", "1x B300 CC SXM6 268GB", "on_demand")]["gpu"] == "B300"
    assert offers[("verda", "1x Tesla V100 16GB", "on_demand")]["gpu"] == "V100-16GB"


def test_hetzner_carries_the_setup_fee_and_monthly_cap_in_usd(collected):
    gex = current(collected)[("hetzner", "GEX131@FSN1", "on_demand")]
    assert gex["gpu"] == "RTX PRO 6000 Max-Q" and gex["country"] == "DE"
    assert (gex["setup_fee_native"], round(gex["setup_fee_usd"], 2)) == (1499.0, 1739.14)
    assert round(gex["price_per_month_usd"], 2) == round(1497.0 * USD_PER_EUR, 2)
    assert current(collected)[("hetzner", "GEX45@HEL1", "on_demand")]["country"] == "FI"


def test_a_hetzner_quote_for_a_10_hour_job_includes_the_setup_fee(collected):
    gex = current(collected)[("hetzner", "GEX131@FSN1", "on_demand")]
    [probe] = rank_offers(QLORA_70B, [gex], get_catalog()).quotes
    ten_hours = dataclasses.replace(QLORA_70B, tokens=round(probe.tokens_per_s * 10 * 3600))
    [quote] = rank_offers(ten_hours, [gex], get_catalog()).quotes
    assert quote.hours == pytest.approx(10, rel=1e-3)
    hourly = gex["price_per_hour"] * quote.hours
    assert quote.cost_usd == pytest.approx(hourly + gex["setup_fee_usd"])
    assert quote.cost_usd > hourly + 1700  # the setup fee (EUR 1,499) is in it


def test_a_job_longer_than_a_month_pays_the_monthly_cap_not_every_hour():
    offer = {"price_per_hour": 3.0, "price_per_month_usd": 1700.0, "setup_fee_usd": 100.0}
    assert job_cost_usd(offer, 10) == 130.0
    assert job_cost_usd(offer, 730 + 10) == 1700.0 + 30.0 + 100.0
    assert job_cost_usd({"price_per_hour": 3.0}, 1000) == 3000.0


def test_a_euro_price_with_no_rate_is_a_failed_run_never_a_guess(warehouse):
    reports = collect(warehouse, EUROPEANS)
    for name in ("scaleway", "ovhcloud", "hetzner"):
        assert reports[name].status == "failed"
        assert reports[name].error == (
            "no ECB EUR->USD rate on or before 2026-11-30: collect ecb first"
        )
    assert reports["verda"].status == "ok"  # published in USD
    assert {key[0] for key in current(warehouse)} == {"verda"}


def test_a_rate_dated_after_the_observation_is_not_used(warehouse):
    collect(warehouse, ["ecb"])
    report = collect(warehouse, ["hetzner"], at=datetime(2026, 11, 26, 12, tzinfo=UTC))["hetzner"]
    assert report.status == "failed" and "on or before 2026-11-26" in report.error


def test_the_latest_rate_on_or_before_the_observation_is_used_and_over_7_days_is_stale(
    warehouse,
):
    collect(warehouse, ["ecb"], ecb=FIXTURES / "ecb_eurofxref_hist_90d.xml")
    collect(warehouse, ["hetzner"], at=datetime(2026, 11, 25, 12, tzinfo=UTC))
    gex = current(warehouse)[("hetzner", "GEX131@FSN1", "on_demand")]
    assert (gex["fx_date"], gex["fx_rate"]) == (date(2026, 11, 16), 1.1498)
    settings = Settings(providers=["hetzner"], scheduler=False)
    now = datetime(2026, 11, 25, 12, 5, tzinfo=UTC)
    freshness = provider_freshness(warehouse, settings, now)
    answer = OfferServer(warehouse, settings).answer(OfferQuery(), now, freshness)
    assert answer.offers and all(o["stale"] for o in answer.offers)  # a 9-day-old rate


def test_providers_lists_every_provider_and_the_rate_source_with_interval_and_next_run(
    collected, client_factory
):
    settings = Settings()
    collector = Collector(collected, settings, client_factory=client_factory, run_at_start=False)
    collector.start()
    try:
        listed = provider_freshness(collected, settings, AT, collector.next_run_at)
    finally:
        collector.shutdown()
    by_name = {f.provider: f for f in listed}
    clouds = {"aws", "azure", "gcp", "oci"}
    assert {"ecb", "vastai", "runpod", "lambda", "coreweave", *EUROPEANS, *clouds} <= set(by_name)
    assert set(by_name) == set(sources())  # every registered module, nothing else
    assert by_name["oci"].interval_seconds == timedelta(hours=24).total_seconds()
    assert all(f.interval_seconds and f.next_run_at for f in listed)
    assert (by_name["ecb"].kind, by_name["ecb"].last_rate_date) == ("rates", date(2026, 11, 27))
    assert by_name["ecb"].interval_seconds == timedelta(days=1).total_seconds()
    assert by_name["verda"].kind == "offers" and by_name["verda"].offer_count == 11


def test_jurisdiction_eea_lists_verda_and_eu_does_not(db_path):
    runner = CliRunner()
    args = ["collect", "--db", str(db_path), "--at", "2026-11-30T12:00:00Z"]
    for name, path in REPLAYS.items():
        args += ["--replay", f"{name}={path}"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output

    def providers(jurisdiction: str) -> set[str]:
        listed = runner.invoke(app, ["offers", "--db", str(db_path), "--format", "json",
                                     "--jurisdiction", jurisdiction])  # fmt: skip
        assert listed.exit_code == 0, listed.output
        return {o["provider"] for o in json.loads(listed.stdout)["offers"]}

    assert "verda" in providers("eea")
    assert "verda" not in providers("eu")
    assert {"scaleway", "hetzner", "ovhcloud"} <= providers("eu")


def test_replay_of_a_directory_is_refused_for_a_provider_that_replays_one_file(db_path):
    result = CliRunner().invoke(
        app, ["collect", "--db", str(db_path), "--replay", f"verda={FIXTURES}"]
    )
    assert result.exit_code == 2 and "verda replays one file, not a directory" in result.output


@pytest.mark.parametrize(
    ("raw", "vram_gb", "gpu", "form_factor"),
    [
        ("H100-PCIe", 80, "H100-80GB", "PCIe"),
        ("B300-SXM", 288, "B300", "SXM"),
        ("RTX PRO 6000 Blackwell Max-Q", 96, "RTX PRO 6000 Max-Q", None),
        ("Tesla V100 16GB", 16, "V100-16GB", None),
        ("B300 SXM6 268GB", 268, "B300", "SXM"),
    ],
)
def test_european_gpu_names_resolve_through_the_catalog(raw, vram_gb, gpu, form_factor):
    resolution = get_catalog().resolve(raw, vram_gb)
    assert resolution.gpu == gpu
    assert (resolution.form_factor.value if resolution.form_factor else None) == form_factor


def test_the_http_api_shows_currency_on_offers_and_the_rate_source_on_providers(collected, db_path):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from tests.conftest import Clock

    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, collected, clock=Clock(AT))) as client:
        offers = client.get("/offers", params={"provider": "hetzner"}).json()["offers"]
        providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
    gex = next(o for o in offers if o["offer_id"] == "GEX131@FSN1")
    assert (gex["currency"], gex["price_per_hour_native"], gex["fx_date"]) == (
        "EUR", 2.4, "2026-11-27")  # fmt: skip
    assert gex["setup_fee_native"] == 1499.0 and gex["stale"] is False
    assert providers["ecb"]["kind"] == "rates"
    assert providers["ecb"]["last_rate_date"] == "2026-11-27"
    assert providers["ecb"]["interval_seconds"] == 86400
    assert providers["hetzner"]["kind"] == "offers" and providers["hetzner"]["offer_count"] == 4


def test_every_european_gpu_type_gets_a_canonical_id(collected):
    unknown = {(o["provider"], o["gpu_raw"]) for o in current(collected).values() if not o["gpu"]}
    assert unknown == set()


def test_hetzners_own_usd_figure_is_kept_as_a_check_never_as_the_price(collected):
    gex = current(collected)[("hetzner", "GEX131@FSN1", "on_demand")]
    assert gex["published_usd_per_hour"] > 0
    assert gex["price_per_hour"] == pytest.approx(gex["price_per_hour_native"] * USD_PER_EUR)
    assert abs(gex["price_per_hour"] / gex["published_usd_per_hour"] - 1) < 0.10


def test_a_usd_figure_far_from_the_ecb_conversion_is_logged_and_the_price_stays(
    warehouse, tmp_path, caplog
):
    feed = json.loads(REPLAYS["hetzner"].read_text())
    for product in feed["products"].values():
        for location in product["locations"]:
            if "hourly" in location["prices"]:
                location["prices"]["hourly"]["USD"] = "99.0000"
    path = tmp_path / "hetzner.json"
    path.write_text(json.dumps(feed))
    with caplog.at_level("WARNING", logger="pipeline.collection.currency"):
        reports = collect(warehouse, ["ecb", "hetzner"], hetzner=path)
    assert reports["hetzner"].status == "ok"
    assert "own USD figure is more than 10% from the ECB conversion" in caplog.text
    gex = current(warehouse)[("hetzner", "GEX131@FSN1", "on_demand")]
    assert gex["price_per_hour"] == pytest.approx(gex["price_per_hour_native"] * USD_PER_EUR)
