"""What the keyless machine-readable providers share: their public endpoint fetched without a
key, unchanged, with its error statuses; a body cut short is a payload error, never fewer
offers; and a replayed collection through the CLI whose offers come out with canonical GPU ids,
both prices, the pricing apart, their places and their availability as stated."""

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
    cloudrift,
    credentials_from_env,
    daytona,
    hyperbolic,
    lium,
    voltagepark,
    vultr,
)
from scrapers.base import USER_AGENT
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

runner = CliRunner()
RECORDED = {
    hyperbolic: "hyperbolic_rental_options.json",
    lium: "lium_nodes.json",
    cloudrift: "cloudrift_instance_types.json",
    vultr: "vultr_plans.json",
    daytona: "daytona_gpu_pricing.json",
    voltagepark: "voltagepark_locations.json",
}
METHOD = {hyperbolic: "GET", lium: "GET", cloudrift: "POST", vultr: "GET", daytona: "GET",
          voltagepark: "GET"}  # fmt: skip
LISTED = {daytona}
"""Rate cards: listed at a price, no stock, out of the price index v1."""
UNAVAILABLE = {voltagepark}
"""Recordings whose every offer is sold out: listed with --include-unavailable."""
PLACES = {
    hyperbolic: {("US", "North America", False), ("CA", "North America", False),
                 ("GB", "Europe", False), ("JP", "Asia", False), (None, "Europe", True)},
    lium: {("JP", "Asia", False), ("US", "North America", False)},
    cloudrift: {("US", "North America", False)},  # the variant hosted nowhere is not available
    vultr: {("US", "North America", False), ("DE", "Europe", True), ("IN", "Asia", False)},
    daytona: {(None, None, None)},  # the rate card names no place
    voltagepark: {("US", "North America", False)},
}  # fmt: skip
"""(country, continent, eea) of the recorded offers."""
MODULES = pytest.mark.parametrize("module", list(RECORDED), ids=[m.NAME for m in RECORDED])


def route(respx_mock: respx.MockRouter, module):
    return respx_mock.route(method=METHOD[module], url=module.URL)


@MODULES
def test_each_provider_is_keyless_and_needs_no_setting_stock_unless_a_rate_card(module):
    assert module.ENV_KEY is None and module.KEY_REQUIRED is False
    provider = PROVIDERS[module.NAME]
    assert credentials_from_env(provider, {}) is None
    assert provider.listed_only is (module in LISTED) is not provider.in_price_index
    assert module.CURRENCY == "USD"
    assert module.URL.startswith("https://")


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_asks_the_public_endpoint_for_json_with_our_user_agent_and_no_key(
    module, respx_mock, client_factory
):
    body = fixture_bytes(RECORDED[module])
    called = route(respx_mock, module).mock(return_value=httpx.Response(200, content=body))
    with client_factory() as client:
        assert module.fetch(client, None) == body
    request = called.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["Accept"] == "application/json"
    assert "Authorization" not in request.headers and "X-API-Key" not in request.headers


@MODULES
@pytest.mark.parametrize("status", [401, 403, 404])
@respx.mock(assert_all_mocked=True)
def test_fetch_refused_or_missing_is_an_http_error_without_retries(
    module, status, respx_mock, client_factory
):
    called = route(respx_mock, module).mock(return_value=httpx.Response(status))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match=f"HTTP {status}"):
        module.fetch(client, None)
    assert called.call_count == 1


@MODULES
@pytest.mark.parametrize("status", [429, 500, 503])
@respx.mock(assert_all_mocked=True)
def test_fetch_retries_a_busy_or_failing_endpoint_then_succeeds(
    module, status, respx_mock, client_factory
):
    body = fixture_bytes(RECORDED[module])
    called = route(respx_mock, module).mock(
        side_effect=[httpx.Response(status), httpx.Response(200, content=body)]
    )
    with client_factory() as client:
        assert module.fetch(client, None) == body
    assert called.call_count == 2


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_of_an_endpoint_that_keeps_failing_is_an_http_error(
    module, respx_mock, client_factory
):
    route(respx_mock, module).mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        module.fetch(client, None)


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_timing_out_is_an_http_error(module, respx_mock, client_factory):
    route(respx_mock, module).mock(side_effect=httpx.ConnectTimeout)
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="timed out"):
        module.fetch(client, None)


@MODULES
def test_a_body_cut_before_its_end_is_a_payload_error_not_fewer_offers(module):
    body = fixture_bytes(RECORDED[module])
    with pytest.raises(ProviderPayloadError, match="not JSON"):
        module.parse(body[: len(body) * 2 // 3], OBSERVED_AT)


@MODULES
@pytest.mark.parametrize("body", [b"<html><body>Access denied</body></html>", b'{"error": 1}'],
                         ids=["html", "other-json"])  # fmt: skip
def test_an_answer_of_another_shape_is_a_payload_error_naming_the_module(module, body):
    with pytest.raises(ProviderPayloadError, match=module.NAME):
        module.parse(body, OBSERVED_AT)


@MODULES
def test_a_replayed_answer_is_collected_and_listed_with_canonical_gpus_and_places(module, db_path):
    replay = f"{module.NAME}={FIXTURES / RECORDED[module]}"
    collected = runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)])
    assert collected.exit_code == 0, collected.output
    everything = ["--include-unavailable"] if module in UNAVAILABLE else []
    listed = runner.invoke(
        app,
        [
            "offers",
            "--provider",
            module.NAME,
            *everything,
            "--format",
            "json",
            "--db",
            str(db_path),
        ],
    )
    assert listed.exit_code == 0, listed.output
    offers = json.loads(listed.stdout)["offers"]
    assert offers and all(o["gpu"] for o in offers), [o["gpu_raw"] for o in offers if not o["gpu"]]
    for offer in offers:
        assert offer["price_per_hour"] == pytest.approx(
            offer["price_per_gpu_hour"] * offer["gpu_count"], abs=0.005
        )
        assert offer["pricing"] in ("on_demand", "spot")
    assert {(o["country"], o["continent"], o["eea"]) for o in offers} == PLACES[module]


def test_hyperbolics_european_regions_answer_the_eea_jurisdiction(db_path):
    replay = f"hyperbolic={FIXTURES / RECORDED[hyperbolic]}"
    assert runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)]).exit_code == 0
    listed = runner.invoke(app, ["offers", "--provider", "hyperbolic", "--jurisdiction", "eea",
                                 "--format", "json", "--db", str(db_path)])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    offers = json.loads(listed.stdout)["offers"]
    assert {o["region"] for o in offers} == {
        "eu-north-4", "eu-north-5", "eu-north-6", "eu-north-7", "eu-west-3", "eu-west-4"
    }  # fmt: skip
    assert all(o["eea"] and o["continent"] == "Europe" for o in offers)


def test_lium_nodes_in_finland_and_germany_answer_the_eea_jurisdiction_spot_apart(db_path):
    replay = f"lium={FIXTURES / 'lium_nodes_europe.json'}"
    assert runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)]).exit_code == 0
    listed = runner.invoke(app, ["offers", "--provider", "lium", "--jurisdiction", "eea",
                                 "--format", "json", "--db", str(db_path)])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    offers = json.loads(listed.stdout)["offers"]
    assert {(o["gpu"], o["country"], o["pricing"]) for o in offers} == {
        ("B300", "FI", "on_demand"), ("H200-141GB", "FI", "on_demand"),
        ("RTX 3090", "DE", "on_demand"),
    }  # fmt: skip
    spot = runner.invoke(app, ["offers", "--provider", "lium", "--pricing", "spot",
                               "--format", "json", "--db", str(db_path)])  # fmt: skip
    assert [(o["country"], o["gpu_count"]) for o in json.loads(spot.stdout)["offers"]] == [
        ("IN", 8)
    ]


def test_cloudrift_variants_sold_out_or_hosted_nowhere_are_listed_only_when_asked(db_path):
    replay = f"cloudrift={FIXTURES / RECORDED[cloudrift]}"
    assert runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)]).exit_code == 0
    args = ["offers", "--provider", "cloudrift", "--format", "json", "--db", str(db_path)]
    shown = json.loads(runner.invoke(app, args).stdout)["offers"]
    everything = json.loads(runner.invoke(app, [*args, "--include-unavailable"]).stdout)["offers"]
    assert len(shown) == 4 and all(o["available"] for o in shown)
    assert {(o["offer_id"], o["region"]) for o in everything if not o["available"]} == {
        ("rtx49-8c-nr.4@us-east-nc-nr-1", "us-east-nc-nr-1"), ("rtxpro6000-11-50-500-1l.1", None)
    }  # fmt: skip
    amd = [o for o in shown if o["gpu"] == "MI350X"]
    assert [(o["gpu_count"], o["price_per_gpu_hour"]) for o in amd] == [(8, 2.5)]
