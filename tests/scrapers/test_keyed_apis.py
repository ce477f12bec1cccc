"""The page providers' keyed path: with the provider's key in the environment `fetch` reads its
API (the key sent as the provider asks, never in a URL, an error or the CLI's output) and its
offers carry live availability; without it the keyless page still serves, as before."""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import ModuleType

import httpx
import pytest
import respx
from typer.testing import CliRunner

from api.cli.commands import app
from scrapers import (
    PROVIDERS,
    ProviderHTTPError,
    ProviderPayloadError,
    credentials_from_env,
    digitalocean,
    hotaisle,
)
from scrapers.base import USER_AGENT, Credentials
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

runner = CliRunner()
KEY = "secret-key-for-the-test"


@dataclass(frozen=True)
class Keyed:
    module: ModuleType
    api_url: str  # the API request the key switches to
    fixture: str  # its recorded answer
    auth: str  # the Authorization header sent with KEY
    env: dict[str, str]  # what else the API path needs in the environment
    live: dict[str, bool]  # offer id -> available, as the recording says


KEYED = [
    Keyed(
        digitalocean,
        digitalocean.API_URL,
        "digitalocean_sizes.json",
        f"Bearer {KEY}",
        {},
        {"gpu-h100x8-640gb@nyc1": True, "gpu-mi300x1-192gb": False},
    ),
    Keyed(
        hotaisle,
        hotaisle.API_URL.format(team="test-team"),
        "hotaisle_available.json",
        f"Token {KEY}",
        {hotaisle.TEAM_ENV: "test-team"},
        {"1x-mi300x-13c-240gb-12288gb@us-michigan-1": True},
    ),
]
CASES = pytest.mark.parametrize("case", KEYED, ids=[c.module.NAME for c in KEYED])


def replayed_offers(name: str, fixture: str, db_path, secret: str) -> list[dict]:
    """`gpuprices collect --replay NAME=FIXTURE`, then every offer `gpuprices offers --provider
    NAME --include-unavailable` lists (JSON); the secret in the environment never printed."""
    replay = f"{name}={FIXTURES / fixture}"
    collected = runner.invoke(app, ["collect", "--replay", replay, "--db", str(db_path)])
    assert collected.exit_code == 0, collected.output
    assert secret not in collected.output
    listed = runner.invoke(app, ["offers", "--provider", name, "--include-unavailable",
                                 "--format", "json", "--db", str(db_path)])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    assert secret not in listed.output
    return json.loads(listed.stdout)["offers"]


def offers_of(module: ModuleType, body: bytes) -> list[tuple]:
    return sorted((o.offer_id, o.pricing, o.price_per_hour, o.available)
                  for o in module.parse(body, OBSERVED_AT).offers)  # fmt: skip


@pytest.fixture
def keyed_env(monkeypatch):
    def set_for(case: Keyed) -> None:
        monkeypatch.setenv(case.module.ENV_KEY, KEY)
        for name, value in case.env.items():
            monkeypatch.setenv(name, value)

    return set_for


@CASES
def test_the_key_is_optional_and_read_from_the_providers_own_variable(case):
    module = case.module
    assert module.KEY_REQUIRED is False
    assert credentials_from_env(PROVIDERS[module.NAME], {}) is None  # no key: the page
    assert credentials_from_env(PROVIDERS[module.NAME], {module.ENV_KEY: KEY}) == Credentials(KEY)


@CASES
@respx.mock(assert_all_mocked=True)
def test_with_a_key_fetch_reads_the_api_sending_the_key_as_the_provider_asks(
    case, respx_mock, client_factory, keyed_env
):
    keyed_env(case)
    body = fixture_bytes(case.fixture)
    route = respx_mock.get(case.api_url).mock(return_value=httpx.Response(200, content=body))
    with client_factory() as client:
        assert offers_of(case.module, case.module.fetch(client, Credentials(KEY))) == offers_of(
            case.module, body
        )
    request = route.calls.last.request
    assert request.headers["Authorization"] == case.auth
    assert request.headers["User-Agent"] == USER_AGENT
    assert KEY not in str(request.url)


@CASES
@pytest.mark.parametrize("status", [401, 403])
@respx.mock(assert_all_mocked=True)
def test_a_refused_key_names_the_variable_and_never_the_key(
    case, status, respx_mock, client_factory, keyed_env
):
    keyed_env(case)
    route = respx_mock.get(case.api_url).mock(return_value=httpx.Response(status))
    with client_factory() as client, pytest.raises(ProviderHTTPError) as exc:
        case.module.fetch(client, Credentials(KEY))
    assert f"HTTP {status}" in str(exc.value) and case.module.ENV_KEY in str(exc.value)
    assert KEY not in str(exc.value)
    assert route.call_count == 1  # not retried


@CASES
@pytest.mark.parametrize(
    ("first", "waits"),
    [(httpx.Response(429, headers={"Retry-After": "7"}), [7.0]), (httpx.Response(500), [2.0])],
    ids=["429-retry-after", "500"],
)
@respx.mock(assert_all_mocked=True)
def test_a_busy_or_failing_api_is_retried_honouring_retry_after(
    case, first, waits, respx_mock, client_factory, keyed_env
):
    keyed_env(case)
    body = fixture_bytes(case.fixture)
    respx_mock.get(case.api_url).mock(side_effect=[first, httpx.Response(200, content=body)])
    with client_factory() as client:
        assert offers_of(case.module, case.module.fetch(client, Credentials(KEY))) == offers_of(
            case.module, body
        )
    assert client_factory.waits == waits


@CASES
@respx.mock(assert_all_mocked=True)
def test_an_api_that_keeps_failing_is_an_http_error(case, respx_mock, client_factory, keyed_env):
    keyed_env(case)
    respx_mock.get(case.api_url).mock(return_value=httpx.Response(503))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 503"):
        case.module.fetch(client, Credentials(KEY))


@CASES
@respx.mock(assert_all_mocked=True)
def test_an_empty_200_is_never_an_empty_success(case, respx_mock, client_factory, keyed_env):
    keyed_env(case)
    respx_mock.get(case.api_url).mock(return_value=httpx.Response(200, content=b""))
    with client_factory() as client, pytest.raises(ProviderPayloadError):
        case.module.parse(case.module.fetch(client, Credentials(KEY)), OBSERVED_AT)


@CASES
def test_with_a_key_a_replayed_api_answer_lists_offers_with_live_availability(
    case, db_path, keyed_env
):
    keyed_env(case)
    offers = {
        o["offer_id"]: o for o in replayed_offers(case.module.NAME, case.fixture, db_path, KEY)
    }
    assert {name: offers[name]["available"] for name in case.live} == case.live
    assert all(o["gpu"] for o in offers.values()), [o["gpu_raw"] for o in offers.values()]
