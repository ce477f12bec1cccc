"""One webhook attempt's transport: a total deadline over connect, TLS, send and read.

httpx's timeouts bound each socket operation, not the whole request: a receiver that sends one
header byte every 2 s never trips a 5 s read timeout. Here every operation of the attempt gets at
most the time left until the attempt's deadline, so the attempt ends by `timeout_s` after it
started, however the receiver trickles. Reads (the only waits a receiver controls once the small
body is sent) also wait in slices of `SLICE_S` and give up as soon as `stop` is set, so a
shutting-down `serve` is not held by a receiver.

Built on httpcore's public `ConnectionPool(network_backend=...)`; one transport per attempt.
"""

from __future__ import annotations

import functools
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpcore
import httpx

__all__ = ["SLICE_S", "AttemptInterruptedError", "DeadlineTransport"]

SLICE_S = 0.1
"""Longest a read waits before looking at the deadline and the stop flag again."""

_T = TypeVar("_T")
_MAPPED: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProxyError, httpx.ProxyError),
)


class AttemptInterruptedError(httpcore.ReadError):
    """The attempt was cut short because the process is stopping."""


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


class _Deadline:
    def __init__(self, timeout_s: float, stop: threading.Event) -> None:
        self.at = time.monotonic() + timeout_s
        self.stop = stop

    def bound(self, timeout: float | None, expired: type[Exception]) -> float:
        """The operation's own timeout, cut to the time left; `expired` once none is left."""
        if self.stop.is_set():
            raise AttemptInterruptedError("interrupted: gpuprices is stopping")
        left = self.at - time.monotonic()
        if left <= 0:
            raise expired("the attempt's deadline passed")
        return left if timeout is None else min(timeout, left)

    def sliced(self, operation: Callable[[float], _T], timeout: float | None) -> _T:
        """Run a read that may be repeated after a timeout, in slices until it returns."""
        own_end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = self.bound(
                None if own_end is None else own_end - time.monotonic(), httpcore.ReadTimeout
            )
            if left <= 0:
                raise httpcore.ReadTimeout("timed out")
            try:
                return operation(min(left, SLICE_S))
            except httpcore.ReadTimeout:
                continue


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._deadline.sliced(lambda t: self._inner.read(max_bytes, t), timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # not sliced: a write cut by a timeout may have sent part of the buffer
        self._inner.write(buffer, self._deadline.bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        bounded = self._deadline.bound(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, deadline: _Deadline) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = self._deadline.bound(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, bounded, local_address, socket_options)
        return _Stream(stream, self._deadline)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.UnsupportedProtocol("webhooks go over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for raised, mapped in _MAPPED:
            if isinstance(exc, raised):
                raise mapped(str(exc) or type(exc).__name__, request=request) from exc
        raise


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors(self._request):
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class DeadlineTransport(httpx.BaseTransport):
    """A transport for one attempt that ends by `timeout_s` from its creation (or at `stop`)."""

    def __init__(self, timeout_s: float, stop: threading.Event) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=1,
            network_backend=_Backend(_Deadline(timeout_s, stop)),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, Iterable)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors(request):
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()
