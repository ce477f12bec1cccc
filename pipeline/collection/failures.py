"""Why a provider run failed, in words: the one place a failure becomes the error text stored
with the run (and shown by `/providers`, the page and `collect`).

`ConnectError: [Errno -2] Name or service not known` says little to most people; "no network:
could not resolve console.vast.ai" says what happened and where to look.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

__all__ = ["failure_words"]

_NO_NAME = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "no address associated",
    "getaddrinfo failed",
)
_REFUSED = "connection refused"
_UNREACHABLE = ("network is unreachable", "no route to host")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _host(exc: httpx.RequestError) -> str:
    try:
        return exc.request.url.host
    except RuntimeError:  # an error raised without its request
        return "the provider"


def _network_words(exc: httpx.RequestError) -> str | None:
    host = _host(exc)
    text = str(exc).lower()
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out: {host} did not answer in time"
    if isinstance(exc, httpx.ConnectError):
        if any(marker in text for marker in _NO_NAME):
            return f"no network: could not resolve {host}"
        if any(marker in text for marker in _UNREACHABLE):
            return f"no network: {host} is unreachable from here"
        if _REFUSED in text:
            return f"could not connect to {host}: connection refused"
        return f"could not connect to {host}: {exc}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"{host} closed the connection without a full answer"
    return None


def failure_words(exc: BaseException) -> str:
    """The failure as one readable sentence. Our own errors already say what to fix and keep
    their context (`runpod: ... (stock in EU CZ)`); only the raw network text in them
    (`ConnectError: [Errno -2] Name or service not known`) is put in words. Any other exception
    is its type and message, or the network failure in words."""
    ours = type(exc).__module__.startswith(("scrapers", "pipeline"))
    text = str(exc) if ours else f"{type(exc).__name__}: {exc}"
    for link in _chain(exc):
        if not isinstance(link, httpx.RequestError):
            continue
        words = _network_words(link)
        if words is None:
            break
        for raw in (f"{type(link).__name__}: {link}", str(link)):
            if raw and raw in text:
                return text.replace(raw, words, 1)
        return text if ours else words
    return text
