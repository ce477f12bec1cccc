"""Security headers on every answer, and redirects that never name a host.

`SecurityHeadersMiddleware` (pure ASGI, as the others) adds to each answer:

- `X-Content-Type-Options: nosniff` (a CSV or JSON body is never run as a script);
- to HTML: a `Content-Security-Policy` that fits the page (its script and stylesheet are files
  under `/static`, no inline code: `PAGE_POLICY`; the API docs' Swagger UI and ReDoc start from
  an inline script, so `/docs` and `/redoc` allow inline code and nothing else: `DOCS_POLICY`),
  frame protection (`frame-ancestors 'none'` and `X-Frame-Options: DENY`) and a
  `Referrer-Policy`;
- a relative `Location` on redirects: Starlette's trailing-slash redirect builds an absolute URL
  from the request's `Host` header, which a client (or a cache in front) chooses.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DOCS_POLICY", "PAGE_POLICY", "SecurityHeadersMiddleware"]

_COMMON = "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    f"connect-src 'self'; {_COMMON}"
)
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    f"img-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; {_COMMON}"
)
DOCS_PATHS = ("/docs", "/redoc")
_EVERY_ANSWER = ((b"x-content-type-options", b"nosniff"),)
_HTML_ONLY = ((b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"))


def _relative(location: bytes) -> bytes:
    """`http://host/path?q` -> `/path?q` (a same-site redirect never needs the host)."""
    parts = urlsplit(location.decode("latin-1"))
    return urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment)).encode("latin-1")


class SecurityHeadersMiddleware:
    """Adds the headers above to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_POLICY if scope["path"] in DOCS_PATHS else PAGE_POLICY

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, _relative(value) if name == b"location" else value)
                    for name, value in message.get("headers", [])
                ]
                headers.extend(_EVERY_ANSWER)
                kind = next((v for n, v in headers if n == b"content-type"), b"")
                if kind.startswith(b"text/html"):
                    headers.extend(_HTML_ONLY)
                    headers.append((b"content-security-policy", policy.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)
