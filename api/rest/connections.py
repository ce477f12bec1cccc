"""The server's own limits, chosen rather than defaulted: connections, header and idle timeouts.

uvicorn closes a keep-alive connection idle after a response (`timeout_keep_alive`) but waits
forever for the first request of a new connection, and accepts connections until the process
runs out of file descriptors: 300 idle sockets under a 256-file limit once made `/healthz`
fail until they closed. `serve` runs uvicorn's own HTTP protocol (httptools, else h11) with two
guards added (`guarded_protocol`):

- a header timeout: a connection that has not sent a whole request head `header_timeout_s` after
  it opened (or after it last became idle and sent a byte) is closed;
- a connection cap: at `max_connections` open, a new connection first closes the one idle the
  longest (no request in progress); when none is idle, uvicorn answers the new one's request
  503 (`limit_concurrency`, one past the cap);
- a head limit: a request head (request line and headers) of over `MAX_HEADER_BYTES` is answered
  431 and the connection closed, counted from the bytes as they arrive before any parser sees
  them, so the limit is the same under httptools (which `serve` picks, and which has none of its
  own: a 32 MiB header was read whole) and h11.

The cap defaults to the open-file limit less `RESERVED_FILES` (the database, logs, the thread
pool's work), at most `DEFAULT_MAX_CONNECTIONS`: sized to the machine it runs on.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from api.rest.problems import PROBLEM_MEDIA_TYPE, problem_response
from pipeline.settings import Settings

__all__ = [
    "MAX_HEADER_BYTES",
    "RESERVED_FILES",
    "guarded_protocol",
    "max_connections",
    "uvicorn_limits",
]

RESERVED_FILES = 64
"""Open files kept for what is not a client connection: the database, logs, sockets out."""
DEFAULT_MAX_CONNECTIONS = 4096
"""The cap without a setting, on a machine whose open-file limit allows more."""
MIN_CONNECTIONS = 8
MAX_HEADER_BYTES = 64 * 1024
"""Largest request head read, whichever parser runs (URLs up to 60 KB are answered, with a 4xx,
not cut off); a longer one is a 431."""
REFUSED_LINGER_S = 1.0
"""Seconds a connection refused with a 431 stays open, its further bytes dropped unread."""
_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")


def _head_too_large_answer() -> bytes:
    body = problem_response(
        431,
        f"The request head (request line and headers) is over {MAX_HEADER_BYTES // 1024} KiB "
        f"({MAX_HEADER_BYTES} bytes): send a shorter URL and fewer or shorter headers",
    ).body
    head = (
        "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        f"content-type: {PROBLEM_MEDIA_TYPE}\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + bytes(body)


def max_connections(settings: Settings) -> int:
    """`settings.max_connections`, else sized from this process's open-file limit."""
    if settings.max_connections is not None:
        return settings.max_connections
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(DEFAULT_MAX_CONNECTIONS, soft - RESERVED_FILES))


class _Guard:
    """Mixed into uvicorn's protocol class: the header timeout and the connection cap."""

    max_connections: int
    header_timeout_s: float
    # uvicorn's protocol attributes this mixin reads
    connections: set[Any]
    cycle: Any
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def _idle(self) -> bool:
        return self.cycle is None or bool(self.cycle.response_complete)

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0  # of the head being received (0 between requests)
        self._head_tail = b""  # its last bytes, where a head end split across reads starts
        self._refused = False
        self._idle_since = time.monotonic()
        if len(self.connections) >= self.max_connections:
            idle = [c for c in self.connections if isinstance(c, _Guard) and c._idle()]
            if idle:
                victim = min(idle, key=lambda c: c._idle_since)
                victim.transport.close()
                # no longer counted from now: its `connection_lost` comes a loop turn later, and
                # this connection's request must not meet the cap (a 503) in between
                self.connections.discard(victim)
        super().connection_made(transport)  # type: ignore[misc]  # uvicorn's protocol, next in the MRO
        self._start_head_timer()

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late, self.cycle)

    def _head_late(self, cycle: Any) -> None:
        self._head_timer = None
        if self.cycle is cycle:  # no request began since the timer started
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._idle():  # bytes of a request head (a body arrives while a request runs)
            if self._head_timer is None:  # a next request's head starts
                self._idle_since = time.monotonic()
                self._start_head_timer()
            if not self._count_head(data):
                self._refuse_head()
                return
        super().data_received(data)  # type: ignore[misc]  # uvicorn's protocol, next in the MRO

    def _count_head(self, data: bytes) -> bool:
        """Count `data` into the head being received; False once it is over the limit."""
        seen = self._head_tail + data
        ends = [i + len(end) for end in _HEAD_ENDS if (i := seen.find(end)) >= 0]
        if ends:  # the head ends in this read: what follows is a body or the next request
            size = self._head_bytes + min(ends) - len(self._head_tail)
            self._head_bytes, self._head_tail = 0, b""
            return size <= MAX_HEADER_BYTES
        self._head_bytes += len(data)
        self._head_tail = seen[-3:]
        return self._head_bytes <= MAX_HEADER_BYTES

    def _refuse_head(self) -> None:
        self._refused = True
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.transport.write(_head_too_large_answer())
        # what the client still sends is read and dropped for a moment, then the connection is
        # closed: closed at once with bytes unread, it would be reset, and the reset can
        # discard the answer before the client reads it
        self.loop.call_later(REFUSED_LINGER_S, self.transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)  # type: ignore[misc]  # uvicorn's protocol, next in the MRO


def guarded_protocol(
    settings: Settings, base: type[asyncio.Protocol] = AutoHTTPProtocol
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (`base`: httptools where installed, else h11) with the
    header timeout, connection cap and head limit of `settings`."""
    return type(
        "GuardedHTTPProtocol",
        (_Guard, base),
        {
            "max_connections": max_connections(settings),
            "header_timeout_s": settings.header_timeout_s,
        },
    )


def uvicorn_limits(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` that bound what clients can hold."""
    cap = max_connections(settings)
    return {
        "http": guarded_protocol(settings),
        "limit_concurrency": cap + 1,  # past the cap only when no connection was idle: a 503
        "timeout_keep_alive": settings.keep_alive_timeout_s,
        "backlog": settings.backlog,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        "timeout_graceful_shutdown": 30,
    }
