"""The FastAPI application: `create_app(settings)` builds it; nothing happens at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from api.routes import gpus, health, offers
from pipeline.errors import PipelineError
from pipeline.settings import Settings
from warehouse import Warehouse, WarehouseError

__all__ = ["create_app"]


def create_app(settings: Settings, warehouse: Warehouse | None = None) -> FastAPI:
    """The app over `settings.db`, or over `warehouse` when the caller already opened one."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = warehouse is None
        app.state.warehouse = warehouse or Warehouse.open(settings.db)
        try:
            yield
        finally:
            if owned:
                app.state.warehouse.close()

    app = FastAPI(
        title="gpuprices",
        summary="Where to fine-tune an LLM right now, and for how much.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings

    @app.exception_handler(PipelineError)
    async def pipeline_error(_request: Request, exc: PipelineError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    @app.exception_handler(WarehouseError)
    async def warehouse_error(_request: Request, exc: WarehouseError) -> JSONResponse:
        return JSONResponse(status_code=503, content={"detail": str(exc)})

    for module in (offers, gpus, health):
        app.include_router(module.router)
    return app
