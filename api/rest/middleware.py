"""What every request meets before a route: a body-size limit, and HEAD as GET.

The two middlewares are pure ASGI (no `BaseHTTPMiddleware`): they see each body chunk as it
arrives, so a 20 MB body is refused from its `Content-Length`, or as soon as the bytes counted
pass the limit, without ever being read whole.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Mapping

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.rest.problems import problem_response

__all__ = [
    "BODY_LIMITS_BYTES",
    "DEFAULT_BODY_LIMIT_BYTES",
    "BodyLimitMiddleware",
    "HeadAsGetMiddleware",
    "tune_for_serving",
]

KIB = 1024
DEFAULT_BODY_LIMIT_BYTES = 64 * KIB
"""Bytes: any JSON body here is a few KB (a workload with a config.json is ~2 KB)."""
BODY_LIMITS_BYTES: Mapping[tuple[str, str], int] = {
    ("POST", "/quotes"): 256 * KIB,  # room for a large Hugging Face config.json
    ("POST", "/alerts"): 256 * KIB,  # a workload alert carries the same body as POST /quotes
    ("POST", "/collections"): 64 * KIB * KIB,  # recorded provider answers: Vast.ai's are MBs
}
"""Per-route limits by (method, path); every other route gets `DEFAULT_BODY_LIMIT_BYTES`."""


GIL_SWITCH_INTERVAL_S = 0.001
"""What `serve` sets (`sys.setswitchinterval`). While a worker thread builds a big page, the event
loop waits for the GIL up to one switch interval each time it needs it, several times per
request: a shorter interval than Python's 5 ms keeps /healthz and small answers quick, for a
negligible cost in throughput (bench/edge.py prints both)."""


def tune_for_serving() -> None:
    """The interpreter settings of a serving process (`gpuprices serve`), set once at start-up.

    The GIL switch interval as above; and `gc.freeze()`: what start-up built (modules, the app)
    is never scanned again, which shortens the longest collection pause (every thread stops)
    while large pages are being built (bench/edge.py: /healthz under load).
    """
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    gc.freeze()


def _limit_text(limit: int) -> str:
    return f"{limit // KIB} KiB ({limit} bytes)"


class _BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            detail=f"Request body is over this route's limit of "
            f"{_limit_text(limit)}; send a smaller body",
        )


class BodyLimitMiddleware:
    """413 for a body over its route's limit: from `Content-Length` before reading anything,
    else as soon as the streamed bytes pass it (chunked bodies have no length)."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Mapping[tuple[str, str], int] = BODY_LIMITS_BYTES,
        default: int = DEFAULT_BODY_LIMIT_BYTES,
    ) -> None:
        self.app, self.limits, self.default = app, limits, default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get((scope["method"], scope["path"]), self.default)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await problem_response(413, _BodyTooLarge(limit).detail)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _BodyTooLarge(limit)
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() and len(value) < 20 else None
    return None


class HeadAsGetMiddleware:
    """`HEAD` answers what `GET` would, headers only, wherever `GET` works."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
