"""Dependencies the routes declare: the warehouse, settings, clock and schedule of this app."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from pipeline.alerts.targets import Resolver, resolve_host
from pipeline.collection.schedule import Collector
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from pipeline.workload.hub import ModelHub
from warehouse import Warehouse

__all__ = [
    "ClockDep",
    "CollectorDep",
    "FreshnessDep",
    "ModelHubDep",
    "OfferServerDep",
    "OffloadDep",
    "ResolverDep",
    "SettingsDep",
    "WarehouseDep",
    "bearer",
    "is_loopback",
    "require_api_key",
]


def _state(name: str) -> Callable[[Request], Awaitable[Any]]:
    """The dependency that answers `app.state.<name>` of the app serving the request: `async`,
    so FastAPI runs it inline instead of handing it to the thread pool (a hop costs more than
    the work)."""

    async def read(request: Request) -> Any:
        return getattr(request.app.state, name)

    return read


WarehouseDep = Annotated[Warehouse, Depends(_state("warehouse"))]
SettingsDep = Annotated[Settings, Depends(_state("settings"))]
ClockDep = Annotated[Callable[[], datetime], Depends(_state("clock"))]
CollectorDep = Annotated[Collector | None, Depends(_state("collector"))]
OfferServerDep = Annotated[OfferServer, Depends(_state("offer_server"))]
"""Where this process serves current offers from (one cache, see `pipeline.market.serving`)."""
ModelHubDep = Annotated[ModelHub, Depends(_state("model_hub"))]
"""Where a quote's Hugging Face id gets its config.json (kept beside the database)."""


async def get_freshness(
    server: OfferServerDep, clock: ClockDep, collector: CollectorDep
) -> list[ProviderFreshness]:
    """Inline while the runs just read serve the request burst; else read in the thread pool."""
    next_runs = collector.next_run_at if collector is not None else (lambda _name: None)
    if server.warm():
        return server.freshness(clock(), next_runs)
    return await run_in_threadpool(server.freshness, clock(), next_runs)


FreshnessDep = Annotated[list[ProviderFreshness], Depends(get_freshness)]

HEAVY_WORKERS = 1
"""Python-heavy answers (offer pages, quotes) computed at once; the others wait their turn, off
the event loop. They hold the GIL for most of their work: a second one at once adds no
throughput and doubles every other thread's wait for the GIL (/healthz's too). Exports and
history are DuckDB work (no GIL): they run in the ordinary thread pool."""
T = TypeVar("T")


class Offload:
    """Runs a heavy call in a worker thread, at most `HEAVY_WORKERS` at a time per app."""

    def __init__(self, limiter: CapacityLimiter) -> None:
        self._limiter = limiter

    async def __call__(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(partial(func, *args, **kwargs), limiter=self._limiter)


async def get_offload(request: Request) -> Offload:
    state = request.app.state
    if getattr(state, "offload", None) is None:
        state.offload = Offload(CapacityLimiter(HEAVY_WORKERS))
    offload: Offload = state.offload
    return offload


OffloadDep = Annotated[Offload, Depends(get_offload)]


def get_resolver() -> Resolver:
    """How webhook host names are resolved (tests override it; nothing else should)."""
    return resolve_host


ResolverDep = Annotated[Resolver, Depends(get_resolver)]
bearer = HTTPBearer(auto_error=False, description="GPUPRICES_API_KEY")


def is_loopback(host: str | None) -> bool:
    """Whether `host` (an address or `localhost`) is this machine's loopback."""
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def require_api_key(
    request: Request,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """Alert management needs `Authorization: Bearer <GPUPRICES_API_KEY>` once a key is set.

    Without a key, a server that listens beyond loopback (`GPUPRICES_HOST=0.0.0.0`) answers
    only loopback clients: alert rules (webhook targets, test sends) are never open to anyone.
    """
    if settings.api_key is None:
        client = request.client.host if request.client else None
        if not is_loopback(settings.host) and not is_loopback(client):
            raise HTTPException(
                status_code=403,
                detail="Alert rules are open to loopback clients only on a server that listens "
                f"on {settings.host} without an API key: set GPUPRICES_API_KEY on the server "
                "and send Authorization: Bearer <key>",
            )
        return
    given = credentials.credentials.encode() if credentials is not None else b""
    if not hmac.compare_digest(given, settings.api_key.get_secret_value().encode()):
        raise HTTPException(
            status_code=401,
            detail="Missing or wrong API key: send Authorization: Bearer <GPUPRICES_API_KEY>",
            headers={"WWW-Authenticate": "Bearer"},
        )
