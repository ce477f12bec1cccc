"""What the five pricing-page providers share: keyless fetches of their public page with its
error statuses, the page-text reading, and a replayed collection through the CLI whose offers
come out with canonical GPU ids, both prices, spot apart from on-demand, and their places."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from typer.testing import CliRunner

from api.cli.commands import app
from scrapers import (
    PROVIDERS,
    ProviderHTTPError,
    ProviderPayloadError,
    crusoe,
    digitalocean,
    hotaisle,
    hyperstack,
    nebius,
)
from scrapers.base import USER_AGENT
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

runner = CliRunner()
PAGES = {
    digitalocean: "digitalocean_pricing.html",
    nebius: "nebius_prices.html",
    crusoe: "crusoe_pricing.html",
    hotaisle: "hotaisle_pricing.html",
    hyperstack: "hyperstack_gpu_pricing.html",
}
PLACES = {
    digitalocean: {(None, "North America")},  # US or Canada
    nebius: {("FI", "Europe"), ("IS", "Europe"), ("FR", "Europe"), ("GB", "Europe"),
             ("IL", "Asia"), ("US", "North America")},
    crusoe: {(None, None)},  # US or Iceland
    hotaisle: {("US", "North America")},
    hyperstack: {(None, None)},  # Canada, Norway or the US
}  # fmt: skip
MODULES = pytest.mark.parametrize("module", list(PAGES), ids=[m.NAME for m in PAGES])


@MODULES
def test_each_page_provider_is_keyless_listed_only_and_out_of_the_price_index(module):
    assert module.KEY_REQUIRED is False  # a key, where one is read, switches to its API
    provider = PROVIDERS[module.NAME]
    assert provider.listed_only and not provider.in_price_index and module.CURRENCY == "USD"
    assert module.URL.startswith("https://")


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_gets_the_page_as_html_with_our_user_agent_and_no_key(
    module, respx_mock, client_factory
):
    body = fixture_bytes(PAGES[module])
    route = respx_mock.get(module.URL).mock(return_value=httpx.Response(200, content=body))
    with client_factory() as client:
        assert module.fetch(client, None) == body
    request = route.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["Accept"] == "text/html"
    assert "Authorization" not in request.headers


@MODULES
@pytest.mark.parametrize("status", [401, 403, 404])
@respx.mock(assert_all_mocked=True)
def test_fetch_refused_or_missing_is_an_http_error_without_retries(
    module, status, respx_mock, client_factory
):
    route = respx_mock.get(module.URL).mock(return_value=httpx.Response(status))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match=f"HTTP {status}"):
        module.fetch(client, None)
    assert route.call_count == 1


@MODULES
@pytest.mark.parametrize("status", [429, 500, 503])
@respx.mock(assert_all_mocked=True)
def test_fetch_retries_a_busy_or_failing_site_then_succeeds(
    module, status, respx_mock, client_factory
):
    body = fixture_bytes(PAGES[module])
    route = respx_mock.get(module.URL).mock(
        side_effect=[httpx.Response(status), httpx.Response(200, content=body)]
    )
    with client_factory() as client:
        assert module.fetch(client, None) == body
    assert route.call_count == 2


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_of_a_site_that_keeps_failing_is_an_http_error(module, respx_mock, client_factory):
    respx_mock.get(module.URL).mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        module.fetch(client, None)


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_timing_out_is_an_http_error(module, respx_mock, client_factory):
    respx_mock.get(module.URL).mock(side_effect=httpx.ConnectTimeout)
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="timed out"):
        module.fetch(client, None)


@MODULES
def test_a_page_cut_before_its_end_is_a_payload_error_not_fewer_rows(module):
    body = fixture_bytes(PAGES[module])
    with pytest.raises(ProviderPayloadError, match="truncated"):
        module.parse(body[: len(body) * 2 // 3], OBSERVED_AT)


@MODULES
@pytest.mark.parametrize(
    "body",
    [b"<html><body><p>Access denied</p></body></html>", b"<html><body></body></html>"],
    ids=["blocked", "empty"],
)
def test_a_page_without_its_price_tables_is_a_payload_error_naming_the_module(module, body):
    with pytest.raises(ProviderPayloadError, match=f"update scrapers/{module.NAME}.py"):
        module.parse(body, OBSERVED_AT)


@MODULES
def test_a_replayed_page_is_collected_and_listed_with_canonical_gpus_and_places(module, db_path):
    replay = f"{module.NAME}={FIXTURES / PAGES[module]}"
    collected = runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)])
    assert collected.exit_code == 0, collected.output
    listed = runner.invoke(
        app, ["offers", "--provider", module.NAME, "--format", "json", "--db", str(db_path)]
    )
    assert listed.exit_code == 0, listed.output
    offers = json.loads(listed.stdout)["offers"]
    assert offers and all(o["gpu"] for o in offers), [o["gpu_raw"] for o in offers if not o["gpu"]]
    for offer in offers:
        assert offer["price_per_hour"] == pytest.approx(
            offer["price_per_gpu_hour"] * offer["gpu_count"], abs=0.005
        )
        assert offer["pricing"] in ("on_demand", "spot") and offer["available"] is True
    assert {(o["country"], o["continent"]) for o in offers} == PLACES[module]


def test_mi300x_is_listed_by_digitalocean_crusoe_and_hot_aisle(db_path):
    replays = [f"{m.NAME}={FIXTURES / PAGES[m]}" for m in (digitalocean, crusoe, hotaisle)]
    args = [arg for replay in replays for arg in ("--replay", replay)]
    assert runner.invoke(app, ["collect", *args, "--db", str(db_path)]).exit_code == 0
    listed = runner.invoke(
        app, ["offers", "--gpu", "MI300X", "--format", "json", "--db", str(db_path)]
    )
    providers = {o["provider"] for o in json.loads(listed.stdout)["offers"]}
    assert providers == {"digitalocean", "crusoe", "hotaisle"}


def test_nebius_offers_in_its_european_regions_answer_the_eea_jurisdiction(db_path):
    replay = f"nebius={FIXTURES / PAGES[nebius]}"
    assert runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)]).exit_code == 0
    listed = runner.invoke(app, ["offers", "--provider", "nebius", "--jurisdiction", "eea",
                                 "--format", "json", "--db", str(db_path)])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    offers = json.loads(listed.stdout)["offers"]
    assert {(o["region"], o["country"]) for o in offers} == {
        ("eu-north1", "FI"), ("eu-north2", "IS"), ("eu-west1", "FR")
    }  # fmt: skip
    assert all(o["eea"] for o in offers)


@pytest.mark.parametrize(
    ("cell", "usd"),
    [("$2.59 per hour", 2.59), ("$3.90/GPU-hr", 3.90), ("$2.99/GPU/hr", 2.99),
     ("\u00a0$1.40", 1.40), (" $0.80", 0.80), ("$1,234.50", 1234.5), ("$7.85", 7.85)],
)  # fmt: skip
def test_a_price_cell_is_usd_per_hour_in_any_of_the_pages_spellings(cell, usd):
    assert usd_per_hour(cell) == pytest.approx(usd)


@pytest.mark.parametrize(
    "cell", ["Contact sales", "Contact us", "N/A", "\u2013\u2013", "-", "", "Per contract after "
             "contacting sales"],
)  # fmt: skip
def test_a_cell_that_states_no_price_gives_none(cell):
    assert usd_per_hour(cell) is None


@pytest.mark.parametrize(
    ("cell", "reason"),
    [("from $0.90", "lowest of a range"), ("\u20ac2.10 per hour", "not a USD amount"),
     ("$1,497 per month", "not a USD amount"), ("$abc", "not a USD amount")],
)  # fmt: skip
def test_a_price_cell_that_is_not_one_hourly_usd_price_raises_its_reason(cell, reason):
    with pytest.raises(ValueError, match=reason):
        usd_per_hour(cell)


def test_labels_are_read_as_words_without_marks_case_or_punctuation():
    assert label_words("On-demand, GPU-hour\u00b9") == ["on", "demand", "gpu", "hour"]
    assert slug("NVIDIA B300, air-cooled (8x)") == "nvidia-b300-air-cooled-8x"


def test_a_body_without_a_closing_html_tag_is_refused():
    with pytest.raises(ProviderPayloadError, match="truncated"):
        complete_html(b"<html><body><table>", "somecloud")
    complete_html(b"<html></HTML >", "somecloud")
