"""What every provider module provides, and the HTTP plumbing they share.

A provider module carries everything about its source (`scrapers.registry.CONTRACT` lists the
constants): its `NAME`, endpoint, key variable, default collection interval, currency, a `fetch`
that does only I/O and a pure `parse`; its regions' places live beside it in
`data/<NAME>_regions.csv` (`scrapers.registry.regions`). Registering it is one line of
`scrapers/__init__.py`, which reads the module into a typed `scrapers.registry.Provider`.
"""

from __future__ import annotations

import csv
import email.utils
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
)

from scrapers.errors import (
    AnswerTooLargeError,
    FetchCancelledError,
    MissingCredentialsError,
    ProviderHTTPError,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_ANSWER_BYTES",
    "REPLAY_HEADER",
    "USER_AGENT",
    "Credentials",
    "RetryTransport",
    "build_client",
    "data_rows",
    "fetch_bytes",
    "fetch_with_key",
    "interruptible_sleep",
    "is_replay",
    "parse_retry_after",
]

logger = logging.getLogger(__name__)

USER_AGENT = (
    "gpuprices/0.1 (+https://github.com/gpuprices/gpuprices; self-hosted GPU price tracker)"
)
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
DEFAULT_ATTEMPTS = 4
BACKOFF_BASE_S = 2.0
MAX_WAIT_S = 60.0
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
"""A provider request's timeout unless its module needs longer (OVHcloud's ~8 MB catalog)."""
REPLAY_HEADER = "X-Gpuprices-Replay"
"""Set on the client that replays one recorded answer: a paging fetch stops after the first page
(a recorded page ends the listing; its next-page link is not followed)."""
MAX_ANSWER_BYTES = 64 * 2**20
"""The longest answer (one request's decoded body) read by default: 64 MiB, as much as one
uploaded answer of `POST /collections` (a 20,000-offer Vast.ai answer is ~46 MB; OVHcloud's
catalog ~8 MB). Past it the run fails with `AnswerTooLargeError`; memory stays bounded (a
140 MB body once added 465 MB)."""
MAX_ERROR_BODY_BYTES = 64 * 2**10
"""Of an error answer, only this much is read (a provider's error code is a short JSON)."""
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
MAX_RETRY_AFTER = timedelta(days=1)
"""A longer (or absurd) `Retry-After` is read as this; callers clamp it further."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """A provider API key; never printed."""

    api_key: str = field(repr=False)

    def __str__(self) -> str:
        return "Credentials(***)"


def is_replay(client: httpx.Client) -> bool:
    """Whether `client` replays one recorded answer (`REPLAY_HEADER`), never the network."""
    return REPLAY_HEADER in client.headers


def data_rows(name: str) -> list[dict[str, str]]:
    """The rows of `scrapers/data/<name>.csv` (a provider's table, each row with its source)."""
    text = resources.files("scrapers").joinpath("data", f"{name}.csv").read_text("utf-8")
    return list(csv.DictReader(text.splitlines()))


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """`Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3), at most
    `MAX_RETRY_AFTER`; None when absent or unreadable (a huge number, a garbage date: never an
    exception)."""
    text = (value or "").strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        digits = text.lstrip("0") or "0"
        if len(digits) > len(str(int(MAX_RETRY_AFTER.total_seconds()))):
            return MAX_RETRY_AFTER
        return min(timedelta(seconds=int(digits)), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:  # "-0000": UTC by RFC 5322
            when = when.replace(tzinfo=UTC)
        wait = when - now
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(wait, timedelta(0)), MAX_RETRY_AFTER)


def _retry_after_s(response: httpx.Response, now: datetime | None = None) -> float | None:
    wait = parse_retry_after(response.headers.get("Retry-After"), now or datetime.now(UTC))
    return wait.total_seconds() if wait is not None else None


def interruptible_sleep(stop: threading.Event) -> Callable[[float], None]:
    """A `sleep` for `RetryTransport` that ends as soon as `stop` is set, raising
    `FetchCancelledError` (the retry is not made: the process is stopping)."""

    def sleep(seconds: float) -> None:
        if stop.wait(seconds):
            raise FetchCancelledError("fetch cancelled during a retry wait: shutting down")

    return sleep


def _should_retry(response: httpx.Response) -> bool:
    return response.status_code in RETRYABLE_STATUS


class RetryTransport(httpx.BaseTransport):
    """Retries 429/5xx answers and transport errors with backoff that honours `Retry-After`."""

    def __init__(
        self,
        inner: httpx.BaseTransport | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_base_s: float = BACKOFF_BASE_S,
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._inner = inner or httpx.HTTPTransport()
        self._attempts = attempts
        self._backoff_base_s = backoff_base_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self.waits_s: list[float] = []

    def _wait(self, state: RetryCallState) -> float:
        wait_s: float = self._backoff_base_s * 2 ** (state.attempt_number - 1)
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            retry_after = _retry_after_s(outcome.result())
            if retry_after is not None:
                wait_s = float(retry_after)
        wait_s = min(wait_s, self._max_wait_s)
        self.waits_s.append(wait_s)
        return wait_s

    def _before_sleep(self, state: RetryCallState) -> None:
        outcome = state.outcome
        request: httpx.Request = state.args[0]
        if outcome is not None and not outcome.failed:
            response: httpx.Response = outcome.result()
            logger.warning("%s answered %s; retrying", request.url.host, response.status_code)
            response.close()
        elif outcome is not None:
            logger.warning("%s: %s; retrying", request.url.host, type(outcome.exception()).__name__)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=self._wait,
            retry=retry_if_result(_should_retry) | retry_if_exception_type(httpx.TransportError),
            sleep=self._sleep,
            before_sleep=self._before_sleep,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
            reraise=True,
        )
        response: httpx.Response = retrying(self._send, request)
        return response

    def _send(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if _should_retry(response):
            response.read()
        return response

    def close(self) -> None:
        self._inner.close()


def build_client(
    transport: httpx.BaseTransport | None = None, *, sleep: Callable[[float], None] = time.sleep
) -> httpx.Client:
    """The client collection runs use: our User-Agent and retries on 429/5xx, waiting between
    them with `sleep` (`interruptible_sleep(stop)` in `serve`)."""
    return httpx.Client(
        transport=transport or RetryTransport(sleep=sleep),
        headers={"User-Agent": USER_AGENT},
        follow_redirects=True,
    )


def fetch_with_key(
    client: httpx.Client,
    url: str,
    creds: Credentials | None,
    *,
    provider: str,
    env_key: str,
    header: str = "Authorization",
    scheme: str = "Bearer ",
    auth_hint: str,
) -> bytes:
    """`GET url` for JSON with the buyer's key in `header` (`scheme` before it: a bearer token by
    default). Without a key, a `MissingCredentialsError` naming `env_key`: the run is *not
    configured*, and nothing is sent."""
    if creds is None:
        raise MissingCredentialsError(f"{env_key} is not set: export it to collect {provider}")
    return fetch_bytes(
        client,
        "GET",
        url,
        provider=provider,
        headers={"Accept": "application/json", header: f"{scheme}{creds.api_key}"},
        auth_hint=auth_hint,
    )


def fetch_bytes(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    provider: str,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    auth_hint: str = "",
    max_bytes: int = MAX_ANSWER_BYTES,
) -> bytes:
    """One request; the body on 2xx, else a `ProviderHTTPError` that says what happened. The
    body is read as it streams and given up past `max_bytes` (`AnswerTooLargeError`)."""
    try:
        with client.stream(method, url, headers=headers, json=json, timeout=timeout) as response:
            if not response.is_success:
                _with_error_body(response).raise_for_status()
            return _bounded_body(response, max_bytes, provider)
    except httpx.HTTPStatusError as exc:
        status = exc.response.status_code
        hint = f"; {auth_hint}" if auth_hint and status in (401, 403) else ""
        raise ProviderHTTPError(
            f"{provider}: HTTP {status} from {exc.request.url.host}{hint}"
        ) from exc
    except httpx.TimeoutException as exc:
        raise ProviderHTTPError(f"{provider}: timed out talking to {exc.request.url.host}") from exc
    except httpx.HTTPError as exc:
        raise ProviderHTTPError(f"{provider}: {type(exc).__name__}: {exc}") from exc


def _with_error_body(response: httpx.Response) -> httpx.Response:
    """An error answer with (at most `MAX_ERROR_BODY_BYTES` of) its body read, for the caller
    that reads the provider's error code from it."""
    head = bytearray()
    for chunk in response.iter_bytes():
        head += chunk
        if len(head) >= MAX_ERROR_BODY_BYTES:
            break
    kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
    body = bytes(head[:MAX_ERROR_BODY_BYTES])
    return httpx.Response(response.status_code, headers=kept, content=body,
                          request=response.request)  # fmt: skip


def _bounded_body(response: httpx.Response, max_bytes: int, provider: str) -> bytes:
    """The (decoded) body, or `AnswerTooLargeError` as soon as it passes `max_bytes`: a declared
    `Content-Length` past it is refused before reading, a longer stream after `max_bytes`."""
    too_large = AnswerTooLargeError(
        f"{provider}: the answer from {response.request.url.host} is longer than its limit of "
        f"{max_bytes:,} bytes; nothing past it was read (a module whose answers are larger "
        "passes a higher max_bytes)"
    )
    declared = response.headers.get("Content-Length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    chunks: list[bytes] = []
    read = 0
    for chunk in response.iter_bytes():
        read += len(chunk)
        if read > max_bytes:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)
