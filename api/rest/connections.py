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
  503 (`limit_concurrency`, one past the cap).

The cap defaults to the open-file limit less `RESERVED_FILES` (the database, logs, the thread
pool's work), at most `DEFAULT_MAX_CONNECTIONS`: sized to the machine it runs on.
"""

from __future__ import annotations

import asyncio
import resource
import time
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from pipeline.settings import Settings

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
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
"""Largest request head h11 reads (URLs up to 60 KB are answered, with a 4xx, not cut off)."""


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
        self._idle_since = time.monotonic()
        if len(self.connections) >= self.max_connections:
            idle = [c for c in self.connections if isinstance(c, _Guard) and c._idle()]
            if idle:
                victim = min(idle, key=lambda c: c._idle_since)
                victim.transport.close()
                # no longer counted from now: its `connection_lost` comes a loop turn later, and
                # this connection's request must not meet the cap (a 503) in between
                self.connections.discard(victim)
        super().connection_made(transport)  # type: ignore[misc]
        self._start_head_timer()

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_late, self.cycle)

    def _head_late(self, cycle: Any) -> None:
        self._head_timer = None
        if self.cycle is cycle:  # no request began since the timer started
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self._idle():  # a next request's head starts
            self._idle_since = time.monotonic()
            self._start_head_timer()
        super().data_received(data)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)  # type: ignore[misc]


def guarded_protocol(settings: Settings) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class with the header timeout and connection cap of `settings`."""
    return type(
        "GuardedHTTPProtocol",
        (_Guard, AutoHTTPProtocol),
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
