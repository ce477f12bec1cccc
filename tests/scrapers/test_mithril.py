"""Mithril: on demand at `reserved_price_cents` (never the bid floor), spot per region at the
last clearing price, in cents and dollar strings, with live capacity; a key is required and its
absence is 'not configured', never a degradation."""

from __future__ import annotations

import json

import httpx
import orjson
import pytest
import respx
from typer.testing import CliRunner

from api.cli.commands import app
from pipeline.catalog import get_catalog
from scrapers import MissingCredentialsError, ProviderHTTPError, ProviderPayloadError, mithril
from scrapers.base import USER_AGENT, Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes
from tests.scrapers.test_keyed_apis import replayed_offers

runner = CliRunner()
BODY = fixture_bytes("mithril_collection.json")
H100 = "it_h100x8SXM5Mith"
A100_1X = "it_a100x1SXM4Mith"
A100_8X = "it_a100x8SXM4Mith"
KEY = "fkey_secret_for_the_test"


def edited(edit) -> bytes:
    data = orjson.loads(BODY)
    edit(data)
    return orjson.dumps(data)


def offers(body: bytes = BODY):
    result = mithril.parse(body, OBSERVED_AT)
    assert result.rejects == []
    return {(o.offer_id, o.pricing): o for o in result.offers}


# parse


def test_on_demand_is_the_reserved_price_never_the_bid_floor():
    h100 = offers()[(H100, "on_demand")]
    # reserved_price_cents 2000 is the on-demand price; minimum_price_cents 800 is the bid floor
    assert h100.price_per_hour == pytest.approx(20.00)
    assert h100.price_per_gpu_hour == pytest.approx(2.50)
    floors = {p["minimum_price_cents"] / 100 for p in orjson.loads(BODY)["pricing"].values()}
    assert not floors & {o.price_per_hour for o in offers().values()}


def test_prices_are_cents_per_instance_and_the_per_gpu_price_is_derived():
    a100 = offers()[(A100_1X, "on_demand")]
    assert (a100.price_per_hour, a100.gpu_count, a100.price_quoted_per) == (1.80, 1, "instance")


def test_a_null_reserved_price_is_no_on_demand_offer_but_spot_stays():
    found = offers()
    assert (A100_8X, "on_demand") not in found
    assert found[(f"{A100_8X}@us-central3-a", "spot")].price_per_hour == pytest.approx(8.80)


def test_spot_is_one_offer_per_region_at_the_dollar_string_last_instance_price():
    spot = {o.region: o for o in offers().values() if o.pricing == "spot" and o.gpu_count == 8
            and o.gpu_raw == "H100 SXM5"}  # fmt: skip
    assert {r: o.price_per_hour for r, o in spot.items()} == {
        "us-central1-a": 12.00, "eu-central1-a": 13.60
    }  # fmt: skip
    assert spot["us-central1-a"].price_per_gpu_hour == pytest.approx(1.50)


def test_availability_is_live_capacity_above_zero():
    found = offers()
    assert found[(H100, "on_demand")].available is True  # available_capacity 3
    assert found[(A100_1X, "on_demand")].available is False  # available_capacity 0
    assert found[(f"{H100}@us-central1-a", "spot")].available is True  # capacity 2
    assert found[(f"{H100}@eu-central1-a", "spot")].available is False  # capacity 0


def test_a_missing_capacity_is_not_available():
    body = edited(lambda d: d["pricing"][H100].pop("available_capacity"))
    assert offers(body)[(H100, "on_demand")].available is False


def test_the_gpu_its_socket_and_the_node_specs_are_read_and_resolve_in_the_catalog():
    h100 = offers()[(H100, "on_demand")]
    assert (h100.gpu_raw, h100.form_factor, h100.vram_gb) == ("H100 SXM5", "SXM", 80.0)
    assert (h100.vcpus, h100.ram_gb, h100.disk_gb, h100.tier) == (
        192.0, 1800.0, 7800.0, "h100-80gb.sxm.8x"
    )  # fmt: skip
    catalog = get_catalog()
    assert catalog.resolve("H100 SXM5", 80.0).gpu == "H100-80GB"
    assert catalog.resolve("A100 SXM4", 80.0).gpu == "A100-80GB"


def test_a_pricing_answer_without_the_reserved_price_is_a_reject_naming_it():
    body = edited(lambda d: d["pricing"][H100].pop("reserved_price_cents"))
    result = mithril.parse(body, OBSERVED_AT)
    assert [(r.record_id, r.reason) for r in result.rejects] == [
        (H100, "missing field 'pricing.reserved_price_cents'")
    ]
    assert result.offer_count == 3  # the other types stay: 2 + 1 offers


def test_a_spot_price_that_is_not_a_dollar_string_is_a_reject():
    body = edited(lambda d: d["spot_availability"][2].update(last_instance_price=1.1))
    result = mithril.parse(body, OBSERVED_AT)
    assert [r.record_id for r in result.rejects] == [A100_1X]
    assert "not a dollar amount" in result.rejects[0].reason


def test_a_cpu_type_is_no_offer_and_no_reject():
    cpu = {"fid": "it_cpu", "name": "cpu.32", "num_cpus": 32, "ram_gb": 128, "num_gpus": 0,
           "gpu_type": None, "gpu_memory_gb": 0}  # fmt: skip
    body = edited(lambda d: d["instance_types"].append(cpu))
    result = mithril.parse(body, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 6


@pytest.mark.parametrize(
    "body",
    [b"", b"[]", b'{"instance_types": []}', b"not json",
     b'{"instance_types": {}, "pricing": {}, "spot_availability": []}'],
    ids=["empty", "a-list", "missing-keys", "not-json", "wrong-types"],
)  # fmt: skip
def test_a_body_that_is_not_one_collection_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="mithril"):
        mithril.parse(body, OBSERVED_AT)


# fetch


def recorded(request: httpx.Request) -> httpx.Response:
    """Mithril's three endpoints answering from the recorded collection."""
    data = orjson.loads(BODY)
    path = request.url.path
    if path == "/v2/instance-types":
        return httpx.Response(200, json=data["instance_types"])
    if path == "/v2/pricing/current":
        return httpx.Response(200, json=data["pricing"][request.url.params["instance_type"]])
    if path == "/v2/spot/availability":
        return httpx.Response(200, json=data["spot_availability"])
    return httpx.Response(404)


def test_fetch_without_a_key_is_not_configured_and_sends_nothing(client_factory):
    with client_factory() as client, pytest.raises(MissingCredentialsError, match=mithril.ENV_KEY):
        mithril.fetch(client, None)


@respx.mock(assert_all_mocked=True)
def test_fetch_asks_the_types_each_types_prices_and_spot_with_the_bearer_key(
    respx_mock, client_factory
):
    route = respx_mock.route(host="api.mithril.ai").mock(side_effect=recorded)
    with client_factory() as client:
        body = mithril.fetch(client, Credentials(KEY))
    assert orjson.loads(body) == orjson.loads(BODY)
    asked = [(c.request.url.path, c.request.url.params.get("instance_type")) for c in route.calls]
    assert asked == [("/v2/instance-types", None), ("/v2/pricing/current", H100),
                     ("/v2/pricing/current", A100_1X), ("/v2/pricing/current", A100_8X),
                     ("/v2/spot/availability", None)]  # fmt: skip
    for call in route.calls:
        assert call.request.headers["Authorization"] == f"Bearer {KEY}"
        assert call.request.headers["User-Agent"] == USER_AGENT
        assert KEY not in str(call.request.url)


@respx.mock(assert_all_mocked=True)
def test_a_401_names_the_variable_and_never_the_key(respx_mock, client_factory):
    respx_mock.route(host="api.mithril.ai").mock(
        return_value=httpx.Response(401, json={"detail": "Invalid API key"})
    )
    with client_factory() as client, pytest.raises(ProviderHTTPError) as exc:
        mithril.fetch(client, Credentials(KEY))
    assert "HTTP 401" in str(exc.value) and "MITHRIL_API_KEY" in str(exc.value)
    assert KEY not in str(exc.value)


@pytest.mark.parametrize(
    ("first", "waits"),
    [(httpx.Response(429, headers={"Retry-After": "7"}), [7.0]), (httpx.Response(503), [2.0])],
    ids=["429-retry-after", "503"],
)
@respx.mock(assert_all_mocked=True)
def test_a_429_or_5xx_is_retried_honouring_retry_after(respx_mock, client_factory, first, waits):
    answered = []

    def respond(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/spot/availability" and not answered:
            answered.append(request)
            return first
        return recorded(request)

    respx_mock.route(host="api.mithril.ai").mock(side_effect=respond)
    with client_factory() as client:
        assert orjson.loads(mithril.fetch(client, Credentials(KEY))) == orjson.loads(BODY)
    assert client_factory.waits == waits


@respx.mock(assert_all_mocked=True)
def test_a_5xx_that_persists_fails_the_run(respx_mock, client_factory):
    respx_mock.route(host="api.mithril.ai").mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        mithril.fetch(client, Credentials(KEY))


@respx.mock(assert_all_mocked=True)
def test_an_empty_200_is_a_payload_error_not_an_empty_success(respx_mock, client_factory):
    respx_mock.route(host="api.mithril.ai").mock(return_value=httpx.Response(200, content=b""))
    with client_factory() as client, pytest.raises(ProviderPayloadError, match="not JSON"):
        mithril.fetch(client, Credentials(KEY))


@respx.mock(assert_all_mocked=True)
def test_an_empty_type_list_collects_no_offers(respx_mock, client_factory):
    respx_mock.route(host="api.mithril.ai").mock(return_value=httpx.Response(200, json=[]))
    with client_factory() as client:
        body = mithril.fetch(client, Credentials(KEY))
    assert mithril.parse(body, OBSERVED_AT).offer_count == 0  # the run fails: "holds no offers"


# the CLI


def test_with_a_key_a_replayed_collection_lists_offers_with_availability(db_path, monkeypatch):
    monkeypatch.setenv("MITHRIL_API_KEY", KEY)
    offers = replayed_offers("mithril", "mithril_collection.json", db_path, KEY)
    found = {(o["offer_id"], o["pricing"]): o for o in offers}
    assert found[(H100, "on_demand")]["gpu"] == "H100-80GB"
    assert found[(H100, "on_demand")]["available"] is True
    assert found[(A100_1X, "on_demand")]["available"] is False
    assert found[(f"{H100}@us-central1-a", "spot")]["country"] == "US"


def test_without_a_key_the_run_is_not_configured_and_never_degraded(db_path, monkeypatch):
    monkeypatch.delenv("MITHRIL_API_KEY", raising=False)
    runner.invoke(app, ["collect", "--provider", "mithril", "--db", str(db_path)])
    quality = runner.invoke(app, ["quality", "--format", "json", "--db", str(db_path)])
    assert quality.exit_code == 0, quality.output
    rows = [p for p in json.loads(quality.stdout)["providers"] if p["provider"] == "mithril"]
    assert [p["health"] for p in rows] == ["not_configured"]
    listed = runner.invoke(app, ["providers", "--format", "json"])
    facts = {p["name"]: p for p in json.loads(listed.stdout)["providers"]}["mithril"]
    assert (facts["key_variable"], facts["key_required"]) == ("MITHRIL_API_KEY", True)
