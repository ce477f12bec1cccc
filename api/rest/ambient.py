"""No write on ambient authority: without an API key, a write comes from this machine, asked by
its loopback name, not from another site.

Without `GPUPRICES_API_KEY`, what allows a write (`POST /collections` replacing a provider's
offers, `POST /alerts`, `DELETE /alerts/{id}`, an MCP session) is only that the client is on
loopback, and a browser on this machine is on loopback too: any page it opens can send a form
(a CORS "simple request", sent without a preflight), and a page whose name is made to resolve to
127.0.0.1 (DNS rebinding) is even same-origin to the browser. So a write of a server without a
key (every `POST`, `PUT`, `PATCH` and `DELETE`, `/mcp` included, except the read-only answers in
`READ_ONLY`) needs:

- a loopback `Host` (`127.0.0.1`, `[::1]`, `localhost`, any port) or none: a rebound name
  arrives as its own `Host`;
- an `Origin`, when sent, naming that same host and port (the page served here), never `null`;
- a `Sec-Fetch-Site`, when sent, of `same-origin` or `none` (typed by the user), never
  `same-site` (another port of this machine is same-site) or `cross-site`.

The command line, curl and scripts send neither header: they pass. Anything else is a 403 that
says what to fix. With a key set, a write needs `Authorization: Bearer <key>`, which a browser
never adds by itself: the routes check it (`api.rest.deps.require_api_key`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from api.rest.deps import is_loopback
from api.rest.problems import problem_response

__all__ = ["READ_ONLY", "WRITE_METHODS", "AmbientAuthorityMiddleware", "write_refusal"]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
READ_ONLY: frozenset[tuple[str, str]] = frozenset({("POST", "/quotes"), ("POST", "/quotes/task")})
"""`POST` routes that only compute an answer from their body (a workload): reads, open to all."""
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})
_FIX = (
    "this server has no API key, so it takes writes only from this machine by its loopback "
    "address (http://127.0.0.1:PORT, not from a web page elsewhere): ask it that way, or set "
    "GPUPRICES_API_KEY on the server and send Authorization: Bearer <key>"
)


def _host_name(netloc: str) -> str:
    """`127.0.0.1:8000` -> `127.0.0.1`, `[::1]:8000` -> `::1`, `Localhost` -> `localhost`."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1:].split("]", 1)[0]
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def write_refusal(headers: dict[str, str]) -> str | None:
    """Why a write with these request headers (lower-case names) is refused, or None."""
    host = headers.get("host")
    if host is not None and not is_loopback(_host_name(host)):
        return f"Write refused: Host {host[:100]!r} is not a loopback name; {_FIX}"
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin.strip().lower())
        same = parts.scheme in ("http", "https") and (
            parts.netloc == host.strip().lower()
            if host is not None
            else is_loopback(_host_name(parts.netloc))
        )
        if not same:
            return f"Write refused: it comes from another site (Origin {origin[:100]!r}); {_FIX}"
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in SAFE_FETCH_SITES:
        return f"Write refused: it comes from another site (Sec-Fetch-Site {site[:40]!r}); {_FIX}"
    return None


class AmbientAuthorityMiddleware:
    """403 for a write of a server without an API key that does not come as above."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in WRITE_METHODS
            and (scope["method"], scope["path"].rstrip("/")) not in READ_ONLY
            and scope["app"].state.settings.api_key is None
        ):
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in scope.get("headers", ())
                if name in (b"host", b"origin", b"sec-fetch-site")
            }
            refused = write_refusal(headers)
            if refused is not None:
                await problem_response(403, refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)
