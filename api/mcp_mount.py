"""`/mcp` on the app (`serve`): the MCP tools of `api.mcp`, with the SDK loaded by the first
request to `/mcp`.

The SDK and its models take tens of MB of a serving process's memory; a process never asked
over MCP does not load them. The first `/mcp` request of a run loads them, builds the server and
starts its session manager in the app's lifespan task group; the lifespan stops it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskStatus

__all__ = ["install_mcp", "mcp_sessions"]


def install_mcp(app: Any, host: str) -> None:
    """Serve the tools at `/mcp` on `app` (a FastAPI app), through its whole middleware stack;
    each tool call asks `app` itself in this process. `mcp_sessions(app)` is entered by the
    app's lifespan: a session manager runs once, so each start of the app makes its own."""
    app.state.mcp_host = host
    app.add_route(
        "/mcp", _Transport(app), methods=["GET", "POST", "DELETE"], include_in_schema=False
    )


@asynccontextmanager
async def mcp_sessions(app: Any) -> AsyncIterator[None]:
    """One run of the app: the session manager, once the first `/mcp` request starts it, runs
    in this task group and stops with it."""
    async with anyio.create_task_group() as group:
        app.state.mcp_group = group
        app.state.mcp_sessions = None
        app.state.mcp_starting = anyio.Lock()
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _started_sessions(app: Any) -> Any:
    """The session manager of the app's current run, loaded and started at the first ask."""
    manager = app.state.mcp_sessions
    if manager is not None:
        return manager
    async with app.state.mcp_starting:
        if app.state.mcp_sessions is None:
            from api.mcp import http_sessions, in_process_server  # the SDK: loaded here

            manager = http_sessions(in_process_server(app), app.state.mcp_host)
            await app.state.mcp_group.start(_run, manager)
            app.state.mcp_sessions = manager
    return app.state.mcp_sessions


async def _run(manager: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


@dataclass(frozen=True, slots=True)
class _Transport:
    """The `/mcp` endpoint: an ASGI app (Starlette calls a plain function with a request)
    handing each request to the session manager of the app's current run."""

    app: Any

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        manager = await _started_sessions(self.app)
        await manager.asgi_app(scope, receive, send)
