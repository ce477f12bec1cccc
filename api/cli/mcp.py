"""`gpuprices mcp`: the offers, quote, history and market answers as MCP tools over stdio."""

from __future__ import annotations

from typing import Any

import anyio
import httpx

from api.app import create_app
from api.cli.common import ConfigOption, DbOption, load_settings, open_existing, user_errors
from api.cli.remote import ApiOption, Remote, remote_for
from pipeline.settings import Settings

__all__ = ["mcp"]


@user_errors
def mcp(db: DbOption = None, config: ConfigOption = None, api: ApiOption = None) -> None:
    """Serve the offers, quote, history and market answers as MCP tools on stdin/stdout, for a
    coding agent: register `gpuprices mcp --db FILE` as a stdio server in its MCP client."""
    settings = load_settings(db, config, scheduler=False)
    remote = remote_for(settings, api)
    if remote is not None:
        openapi = remote.get("/openapi.json")  # fails here, as one line, if it is not reachable
        anyio.run(_serve_remote, remote, openapi)
    else:
        with open_existing(settings) as warehouse:
            anyio.run(_serve_local, settings, warehouse)


async def _serve(server: Any) -> None:
    from mcp.server.stdio import stdio_server  # the SDK, loaded when this command runs

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_local(settings: Settings, warehouse: Any) -> None:
    """The tools over the app itself, in this process, on the database this command opened."""
    from api.mcp import in_process_server

    app = create_app(settings, warehouse)
    async with app.router.lifespan_context(app):
        await _serve(in_process_server(app))


async def _serve_remote(remote: Remote, openapi: dict[str, Any]) -> None:
    """The tools over a running server (beside the database, or `--api URL`)."""
    key = remote.settings.api_key
    headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key is not None else {}

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=remote.url.rstrip("/"), headers=headers, timeout=60.0)

    from api.mcp import mcp_server

    await _serve(mcp_server(lambda: openapi, client))
