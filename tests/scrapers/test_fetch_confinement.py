"""What a collector fetches (issue 46, finding 9): only https on its provider's own hosts, through
pagination and redirects; each answer bounded in bytes, read as it streams."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

import scrapers
from pipeline.alerts.errors import UnsafeTargetError
from pipeline.alerts.targets import check_target
from pipeline.collection.collect import run_collection
from scrapers import ProviderHTTPError, azure, hetzner
from scrapers.base import MAX_ANSWER_BYTES, build_client, fetch_bytes
from scrapers.errors import AnswerTooLargeError, ProviderURLError
from scrapers.urls import check_fetch_url
from tests.conftest import fixture_bytes

PAGE1 = orjson.loads(fixture_bytes("azure_answers/page-1.json"))
CHUNK_BYTES = 64 * 1024


def _azure_page_linking_to(link: str) -> bytes:
    return orjson.dumps({**PAGE1, "NextPageLink": link})


@pytest.mark.parametrize(
    ("link", "why"),
    [
        ("https://169.254.169.254/latest/meta-data/", "IP address"),
        ("http://prices.azure.com/api/retail/prices?$skip=1000", "only https"),
        ("https://127.0.0.1:8000/collections", "only port 443"),
        ("https://[::1]/", "IP address"),
        ("https://attacker.example/next", "not a host of azure"),
        ("https://prices.azure.com.attacker.example/next", "not a host of azure"),
        ("https://user:pw@prices.azure.com/next", "user name or password"),
        ("file:///etc/passwd", "only https"),
    ],
)
@respx.mock(assert_all_mocked=True, assert_all_called=False)
def test_an_azure_next_page_link_off_its_hosts_fails_the_run_before_any_request(
    respx_mock, client_factory, warehouse, link, why
):
    respx_mock.get(azure.URL, params={"$filter": azure.FILTER}).mock(
        return_value=httpx.Response(200, content=_azure_page_linking_to(link))
    )
    elsewhere = respx_mock.route(
        url__regex=r"^(?!https://prices\.azure\.com/api/retail/prices\?\$filter)"
    )
    [report] = run_collection(["azure"], warehouse, client_factory=client_factory)
    assert report.status == "failed" and why in (report.error or ""), report.error
    assert not elsewhere.called


@respx.mock(assert_all_mocked=True, assert_all_called=False)
def test_a_next_page_link_on_the_providers_own_host_is_followed(respx_mock, client_factory):
    respx_mock.get(azure.URL, params={"$filter": azure.FILTER}).mock(
        return_value=httpx.Response(200, content=_azure_page_linking_to(f"{azure.URL}?$skip=1000"))
    )
    second = respx_mock.get(url__regex=r"\$skip=1000").mock(
        return_value=httpx.Response(200, content=orjson.dumps({**PAGE1, "NextPageLink": None}))
    )
    from scrapers.urls import confine

    with confine(client_factory(), scrapers.PROVIDERS["azure"].hosts, azure.NAME) as client:
        azure.fetch(client, None)
    assert second.called


@pytest.mark.parametrize(
    "location",
    ["http://169.254.169.254/latest/meta-data/", "https://evil.example/prices.json",
     "https://127.0.0.1/x"],
)  # fmt: skip
@respx.mock(assert_all_mocked=True, assert_all_called=False)
def test_a_redirect_off_the_providers_hosts_is_refused_and_never_sent(
    respx_mock, client_factory, warehouse, location
):
    respx_mock.get(hetzner.URL).mock(
        return_value=httpx.Response(302, headers={"Location": location})
    )
    target = respx_mock.route(url__startswith=location.split("/latest")[0].rstrip("/"))
    [report] = run_collection(["hetzner"], warehouse, client_factory=client_factory)
    assert report.status == "failed" and "refused" in (report.error or ""), report.error
    assert not target.called


def test_every_providers_hosts_cover_its_endpoints():
    for name, source in scrapers.sources().items():
        hosts, module = source.hosts, source.module
        assert hosts, name
        for url in (getattr(module, k) for k in ("URL", "SPOT_URL", "REST_URL") if
                    hasattr(module, k)):  # fmt: skip
            check_fetch_url(url.format(location="x", zone="x"), hosts, name)


def test_a_subdomain_counts_as_the_providers_host_but_a_lookalike_does_not():
    hosts = scrapers.PROVIDERS["hetzner"].hosts
    check_fetch_url("https://www.hetzner.com/x", hosts, "hetzner")
    check_fetch_url("https://hetzner.com/x", hosts, "hetzner")
    with pytest.raises(ProviderURLError, match="not a host of hetzner"):
        check_fetch_url("https://nothetzner.com/x", hosts, "hetzner")


def test_webhook_targets_and_collectors_refuse_the_metadata_address_by_the_same_rule():
    with pytest.raises(UnsafeTargetError, match="cloud metadata address"):
        check_target("https://169.254.169.254/", allow_private=True)
    with pytest.raises(ProviderURLError, match="cloud metadata address"):
        check_fetch_url("https://169.254.169.254/", {"169.254.169.254"}, "odd")


def _streamed(total_bytes: int, sent: list[int]):
    def body():
        while sum(sent) < total_bytes:
            sent.append(CHUNK_BYTES)
            yield b" " * CHUNK_BYTES

    return body


def test_an_answer_past_the_byte_limit_fails_the_run_without_reading_the_rest(warehouse):
    sent: list[int] = []
    total = MAX_ANSWER_BYTES * 4

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=_streamed(total, sent)())

    [report] = run_collection(
        ["hetzner"], warehouse,
        client_factory=lambda: build_client(httpx.MockTransport(answer)),
    )  # fmt: skip
    assert report.status == "failed"
    assert f"longer than its limit of {MAX_ANSWER_BYTES:,} bytes" in (report.error or "")
    assert sum(sent) <= MAX_ANSWER_BYTES + CHUNK_BYTES  # stopped reading at the limit


def test_a_declared_length_past_the_limit_is_refused_before_reading():
    sent: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"Content-Length": str(10**9)}, content=_streamed(10**9, sent)()
        )

    with build_client(httpx.MockTransport(answer)) as client, pytest.raises(AnswerTooLargeError):
        fetch_bytes(client, "GET", hetzner.URL, provider="hetzner", max_bytes=1000)
    assert sum(sent) <= CHUNK_BYTES


def test_an_error_answer_keeps_a_bounded_body_for_the_error_code():
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            403, content=b'{"error": {"code": "global/forbidden"}}' + b" " * 10**6
        )

    client = build_client(httpx.MockTransport(answer))
    with client, pytest.raises(ProviderHTTPError, match="HTTP 403") as raised:
        fetch_bytes(client, "GET", hetzner.URL, provider="hetzner")
    cause = raised.value.__cause__
    assert isinstance(cause, httpx.HTTPStatusError)
    assert cause.response.content.startswith(b'{"error"') and len(cause.response.content) < 10**6
