"""The FastAPI application: `create_app(settings)` builds it; nothing happens at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime

import httpx
from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.middleware.gzip import GZipMiddleware

from api.mcp_mount import install_mcp, mcp_sessions
from api.rest.ambient import AmbientAuthorityMiddleware
from api.rest.docs import install_offline_docs
from api.rest.middleware import BodyLimitMiddleware, HeadAsGetMiddleware
from api.rest.problems import install_problem_handlers
from api.rest.routes import (
    alerts,
    collections,
    gpus,
    health,
    history,
    index,
    metrics,
    offers,
    providers,
    quotes,
    regions,
)
from api.rest.scratch import ScratchSpace
from api.rest.security import SecurityHeadersMiddleware
from api.web import route as web
from pipeline.base import utc_now
from pipeline.collection.schedule import Collector
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from pipeline.workload.hub import ModelHub
from warehouse import Warehouse

__all__ = ["create_app"]

logger = logging.getLogger(__name__)

GZIP_LEVEL = 5
"""zlib level of compressed answers: most of level 9's saving on JSON, at a fraction of its CPU."""
GZIP_MINIMUM_BYTES = 1024
"""Answers shorter than this go uncompressed (the headers would eat the saving)."""


def create_app(
    settings: Settings,
    warehouse: Warehouse | None = None,
    *,
    clock: Callable[[], datetime] = utc_now,
    client_factory: Callable[[], httpx.Client] | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> FastAPI:
    """The app over `settings.db` (or over `warehouse` when the caller already opened one).

    With `settings.scheduler` on, the app also collects on schedule through the same database
    handle it reads from, starting at start-up; the lifespan stops the schedule (letting a running
    write finish) before the database is closed. `settings.role == "api"` is a read-only replica:
    no collection, no webhook sending, no pruning. `on_shutdown` runs last when the app stops
    (`serve` removes its address file there: uvicorn re-raises SIGTERM once the app is down).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = warehouse is None
        app.state.warehouse = warehouse or Warehouse.open(settings.warehouse_target)
        app.state.offer_server = OfferServer(app.state.warehouse, settings)
        app.state.collector = None
        app.state.scratch = ScratchSpace.open()  # removes what killed servers left there
        if settings.scheduler and settings.role != "api":
            app.state.collector = Collector(
                app.state.warehouse, settings, client_factory=client_factory, now=clock
            )
            app.state.collector.start()
        try:
            async with mcp_sessions(app):
                yield
        finally:
            if app.state.collector is not None:
                app.state.collector.shutdown()
            app.state.scratch.close()
            if owned:
                app.state.warehouse.close()
            if on_shutdown is not None:
                on_shutdown()

    app = FastAPI(
        title="gpuprices",
        summary="Where to fine-tune an LLM right now, and for how much.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served below from local files: the docs work offline
        redoc_url=None,
        # Off unless asked for: enabled or not, it looks up the global providers per request
        telemetry=TelemetryConfig(
            tracing=settings.opentelemetry,
            metrics=settings.opentelemetry,
            logs=settings.opentelemetry,
        ),
    )
    app.state.settings = settings
    app.state.model_hub = ModelHub.from_env(settings.model_configs_dir)
    app.state.clock = clock
    app.state.client_factory = client_factory  # what collections asked over HTTP fetch with
    app.state.collector = None

    install_problem_handlers(app)
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(AmbientAuthorityMiddleware)  # no key: writes from loopback pages only
    app.add_middleware(HeadAsGetMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(
        GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES, compresslevel=GZIP_LEVEL
    )  # outermost: every answer, errors too; bodies over 128 KiB compressed in a worker thread
    routers = (  # /offers first: the most asked route is matched first
        offers, quotes, history, index, gpus, providers, regions, metrics, health, alerts,
        collections,
    )  # fmt: skip
    for module in routers:  # each route's query model refuses names it does not take
        app.include_router(module.router)
    install_mcp(app, settings.host)  # the read answers as MCP tools at /mcp
    install_offline_docs(app)  # before the page's /static mount, which would shadow its files
    app.include_router(web.router)  # the web page reads its own query leniently
    web.mount_static(app)
    return app
