"""What the providers that need the buyer's key share (JarvisLabs, Seeweb, Fluidstack,
Latitude.sh): the key from its variable, sent in the provider's header and nowhere else; a
refused key says which variable to check without repeating the key; 429 waits as long as
Retry-After says, 5xx is retried, an empty answer is a failed run that keeps the last snapshot;
a replayed answer, with the key set, lists offers with their availability through the CLI; and
without the key the provider is not configured, never degraded."""

from __future__ import annotations

import json

import httpx
import orjson
import pytest
import respx
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app
from pipeline.collection.collect import run_collection
from pipeline.market.quality import provider_health
from pipeline.redaction import secret_values
from pipeline.settings import Settings
from scrapers import (
    PROVIDERS,
    MissingCredentialsError,
    ProviderHTTPError,
    ProviderPayloadError,
    fluidstack,
    jarvislabs,
    latitude,
    seeweb,
)
from scrapers.base import USER_AGENT, Credentials
from scrapers.registry import credentials_from_env
from tests.conftest import FIXTURES, LOOPBACK_URL, OBSERVED_AT, fixture_bytes

runner = CliRunner()
KEY = "sk-live-do-not-print-0123456789"
RECORDED = {
    jarvislabs: "jarvislabs_server_meta.json",
    seeweb: "seeweb_plans.json",
    fluidstack: "fluidstack_configurations.json",
    latitude: "latitude_plans.json",
}
HEADER = {jarvislabs: ("Authorization", f"Bearer {KEY}"), seeweb: ("X-APITOKEN", KEY),
          fluidstack: ("api-key", KEY), latitude: ("Authorization", f"Bearer {KEY}")}  # fmt: skip
"""The header each provider's documentation names for the key, with the value sent."""
EMPTY = {jarvislabs: b'{"server_meta": [], "currency": "USD"}',
         seeweb: b'{"status": "ok", "plans": []}', fluidstack: b"[]",
         latitude: b'{"data": [], "meta": {}}'}  # fmt: skip
"""A well-formed answer (of the module's `URL`) listing nothing."""
ECB_RATES = FIXTURES / "ecb_eurofxref_daily.xml"
MODULES = pytest.mark.parametrize("module", list(RECORDED), ids=[m.NAME for m in RECORDED])


def answers(module) -> dict[str, bytes]:
    """The answers one live fetch reads, by URL, taken from the module's recording (Seeweb's
    recording joins two answers, as its fetch does)."""
    recorded = fixture_bytes(RECORDED[module])
    if module is seeweb:
        joined = orjson.loads(recorded)
        return {seeweb.URL: orjson.dumps(joined["plans"]),
                seeweb.AVAILABLES_URL: orjson.dumps(joined[seeweb.AVAILABLES_KEY])}  # fmt: skip
    return {module.URL: recorded}


def serve(respx_mock: respx.MockRouter, module, *main: httpx.Response, others: bool = True):
    """The module's `URL` answering `main` in turn (its recorded answer when none) and, with
    `others`, every other URL its fetch reads answering its recorded answer."""
    recorded = answers(module)
    for url, body in recorded.items():
        if url != module.URL and others:
            respx_mock.get(url).mock(return_value=httpx.Response(200, content=body))
    route = respx_mock.get(module.URL)
    if main:
        return route.mock(side_effect=list(main))
    return route.mock(return_value=httpx.Response(200, content=recorded[module.URL]))


def is_the_recording(module, payload: bytes) -> bool:
    recorded = module.parse(fixture_bytes(RECORDED[module]), OBSERVED_AT)
    fetched = module.parse(payload, OBSERVED_AT)
    return fetched.offers == recorded.offers and fetched.offer_count > 0


@MODULES
def test_the_key_is_required_and_read_from_the_documented_variable(module):
    assert module.KEY_REQUIRED is True and module.ENV_KEY
    provider = PROVIDERS[module.NAME]
    assert credentials_from_env(provider, {module.ENV_KEY: f" {KEY} "}) == Credentials(KEY)
    with pytest.raises(MissingCredentialsError, match=f"{module.ENV_KEY} is not set"):
        credentials_from_env(provider, {})
    with pytest.raises(MissingCredentialsError, match=f"{module.ENV_KEY} is not set"):
        module.fetch(httpx.Client(), None)


@MODULES
def test_the_key_is_masked_in_logs_and_may_come_from_the_settings_file(module):
    assert secret_values(None, {module.ENV_KEY: KEY}) == {KEY}  # its variable's name is a secret's
    assert Settings(api_keys={module.ENV_KEY: KEY}).provider_env({})[module.ENV_KEY] == KEY


@MODULES
@respx.mock(assert_all_mocked=True)
def test_fetch_sends_the_key_in_the_documented_header_only(module, respx_mock, client_factory):
    serve(respx_mock, module)
    with client_factory() as client:
        assert is_the_recording(module, module.fetch(client, Credentials(KEY)))
    header, value = HEADER[module]
    for call in respx_mock.calls:
        assert call.request.headers[header] == value
        assert call.request.headers["User-Agent"] == USER_AGENT
        assert KEY not in str(call.request.url)
        assert [k for k, v in call.request.headers.items() if KEY in v] == [header.lower()]


@MODULES
@pytest.mark.parametrize("status", [401, 403])
@respx.mock(assert_all_mocked=True)
def test_a_refused_key_says_which_variable_to_check_without_the_key(
    module, status, respx_mock, client_factory
):
    refused = httpx.Response(status, json={"message": "Invalid token", "echo": KEY})
    called = serve(respx_mock, module, refused, others=False)
    with client_factory() as client, pytest.raises(ProviderHTTPError) as info:
        module.fetch(client, Credentials(KEY))
    assert f"HTTP {status}" in str(info.value) and module.ENV_KEY in str(info.value)
    assert KEY not in str(info.value)
    assert called.call_count == 1  # a refused key is not retried


@MODULES
@respx.mock(assert_all_mocked=True)
def test_429_waits_as_long_as_retry_after_says_then_succeeds(module, respx_mock, client_factory):
    recorded = answers(module)[module.URL]
    serve(respx_mock, module, httpx.Response(429, headers={"Retry-After": "7"}),
          httpx.Response(200, content=recorded))  # fmt: skip
    with client_factory() as client:
        assert is_the_recording(module, module.fetch(client, Credentials(KEY)))
    assert client_factory.waits == [7.0]


@MODULES
@respx.mock(assert_all_mocked=True)
def test_a_5xx_is_retried_and_one_that_persists_is_an_http_error(
    module, respx_mock, client_factory
):
    recorded = answers(module)[module.URL]
    called = serve(respx_mock, module, httpx.Response(503), httpx.Response(200, content=recorded))
    with client_factory() as client:
        assert is_the_recording(module, module.fetch(client, Credentials(KEY)))
    assert called.call_count == 2
    called.mock(side_effect=None, return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        module.fetch(client, Credentials(KEY))


@MODULES
@respx.mock(assert_all_mocked=True)
def test_an_empty_200_is_a_payload_error_naming_the_provider(module, respx_mock, client_factory):
    serve(respx_mock, module, httpx.Response(200, content=b""))
    with client_factory() as client:
        payload = module.fetch(client, Credentials(KEY))
    with pytest.raises(ProviderPayloadError, match=module.NAME):
        module.parse(payload, OBSERVED_AT)


@MODULES
@respx.mock(assert_all_mocked=True)
def test_an_answer_listing_nothing_fails_the_run_and_keeps_the_last_snapshot(
    module, respx_mock, warehouse, client_factory
):
    env = {module.ENV_KEY: KEY}
    run_collection(["ecb"], warehouse, replays={"ecb": ECB_RATES})  # Seeweb quotes euros
    called = serve(respx_mock, module)
    [good] = run_collection([module.NAME], warehouse, client_factory=client_factory, env=env)
    called.mock(return_value=httpx.Response(200, content=EMPTY[module]))
    [empty] = run_collection([module.NAME], warehouse, client_factory=client_factory, env=env)
    assert good.status == "ok" and good.offer_count > 0
    assert empty.status == "failed"
    assert "holds no offers; the last good snapshot stays" in (empty.error or "")
    with warehouse.cursor() as cur:
        [(stored,)] = cur.execute(
            "SELECT count(*) FROM offer_observations WHERE provider = ?", [module.NAME]
        ).fetchall()
    assert stored == good.offer_count


@MODULES
def test_a_body_cut_short_or_of_another_shape_is_a_payload_error(module):
    body = fixture_bytes(RECORDED[module])
    for broken in (body[: len(body) // 2], b"<html>Access denied</html>", b'{"error": 1}'):
        with pytest.raises(ProviderPayloadError, match=module.NAME):
            module.parse(broken, OBSERVED_AT)


def offers_listed(name: str, db_path, *extra: str) -> list[dict]:
    listed = runner.invoke(app, ["offers", "--provider", name, *extra, "--format", "json",
                                 "--db", str(db_path)])  # fmt: skip
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.stdout)["offers"]


@MODULES
def test_with_the_key_set_a_replayed_answer_lists_offers_with_their_availability(
    module, db_path, monkeypatch
):
    monkeypatch.setenv(module.ENV_KEY, KEY)
    replay = f"{module.NAME}={FIXTURES / RECORDED[module]}"
    rates = f"ecb={ECB_RATES}"  # Seeweb quotes euros
    collected = runner.invoke(
        app, ["collect", "--replay", rates, "--replay", replay, "--db", str(db_path)]
    )
    assert collected.exit_code == 0, collected.output
    assert KEY not in collected.output
    everything = offers_listed(module.NAME, db_path, "--include-unavailable")
    shown = offers_listed(module.NAME, db_path)
    assert everything and all(o["gpu"] for o in everything), [
        o["gpu_raw"] for o in everything if not o["gpu"]
    ]
    assert shown and all(o["available"] for o in shown)
    assert {o["available"] for o in everything} <= {True, False}
    for offer in everything:
        assert offer["price_per_hour"] == pytest.approx(
            offer["price_per_gpu_hour"] * offer["gpu_count"], abs=0.005
        )


@MODULES
def test_without_the_key_the_provider_is_not_configured_never_degraded(module, db_path, warehouse):
    for _ in range(4):  # a failing provider would degrade after 3 failed runs
        [report] = run_collection([module.NAME], warehouse, env={})
        assert report.status == "failed" and f"{module.ENV_KEY} is not set" in (report.error or "")
    assert provider_health(warehouse)[module.NAME]["health"] == "not_configured"
    listed = runner.invoke(app, ["providers", "--format", "json"])
    [row] = [p for p in json.loads(listed.stdout)["providers"] if p["name"] == module.NAME]
    assert (row["key_variable"], row["key_required"]) == (module.ENV_KEY, True)


@MODULES
def test_the_quality_command_shows_a_provider_without_its_key_as_not_configured(
    module, db_path, monkeypatch
):
    monkeypatch.delenv(module.ENV_KEY, raising=False)  # SEEWEB_TOKEN is not an *_API_KEY
    collected = runner.invoke(app, ["collect", "--provider", module.NAME, "--db", str(db_path)])
    assert collected.exit_code == 1, collected.output  # its run failed, before any request
    quality = runner.invoke(app, ["quality", "--provider", module.NAME, "--format", "json",
                                  "--db", str(db_path)])  # fmt: skip
    assert quality.exit_code == 0, quality.output
    [row] = json.loads(quality.stdout)["providers"]
    assert row["health"] == "not_configured" and row["reasons"] == []


@MODULES
@respx.mock(assert_all_mocked=True)
def test_the_key_is_never_in_providers_quality_or_metrics_and_no_key_reads_not_configured(
    module, respx_mock, warehouse, db_path
):
    serve(respx_mock, module, httpx.Response(401, json={"message": "Bad token", "token": KEY}),
          others=False)  # fmt: skip
    [run] = run_collection([module.NAME], warehouse, env={module.ENV_KEY: KEY})
    assert run.status == "failed" and module.ENV_KEY in (run.error or "")
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse), base_url=LOOPBACK_URL) as client:
        answers = [client.get(path) for path in ("/providers", "/quality", "/metrics")]
        assert all(a.status_code == 200 for a in answers)
        assert not [a.url for a in answers if KEY in a.text]
        [unconfigured] = run_collection([module.NAME], warehouse, env={})
        [row] = [p for p in client.get("/providers").json()["providers"]
                 if p["provider"] == module.NAME]  # fmt: skip
    assert row["health"] == "not_configured"
    assert row["last_error"] == unconfigured.error
