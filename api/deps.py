"""Dependencies the routes declare: the warehouse, settings, clock and schedule of this app."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pipeline.alerts.targets import Resolver, resolve_host
from pipeline.freshness import ProviderFreshness, provider_freshness
from pipeline.schedule import Collector
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = [
    "ClockDep",
    "CollectorDep",
    "FreshnessDep",
    "ResolverDep",
    "SettingsDep",
    "WarehouseDep",
    "require_api_key",
]


def get_warehouse(request: Request) -> Warehouse:
    warehouse: Warehouse = request.app.state.warehouse
    return warehouse


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_clock(request: Request) -> Callable[[], datetime]:
    clock: Callable[[], datetime] = request.app.state.clock
    return clock


def get_collector(request: Request) -> Collector | None:
    collector: Collector | None = request.app.state.collector
    return collector


WarehouseDep = Annotated[Warehouse, Depends(get_warehouse)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
ClockDep = Annotated[Callable[[], datetime], Depends(get_clock)]
CollectorDep = Annotated[Collector | None, Depends(get_collector)]


def get_freshness(
    warehouse: WarehouseDep, settings: SettingsDep, clock: ClockDep, collector: CollectorDep
) -> list[ProviderFreshness]:
    next_runs = collector.next_run_at if collector is not None else (lambda _name: None)
    return provider_freshness(warehouse, settings, clock(), next_runs)


FreshnessDep = Annotated[list[ProviderFreshness], Depends(get_freshness)]


def get_resolver() -> Resolver:
    """How webhook host names are resolved (tests override it; nothing else should)."""
    return resolve_host


ResolverDep = Annotated[Resolver, Depends(get_resolver)]
_bearer = HTTPBearer(auto_error=False, description="GPUPRICES_API_KEY")


def require_api_key(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Alert management needs `Authorization: Bearer <GPUPRICES_API_KEY>` once a key is set."""
    if settings.api_key is None:
        return
    given = credentials.credentials.encode() if credentials is not None else b""
    if not hmac.compare_digest(given, settings.api_key.get_secret_value().encode()):
        raise HTTPException(
            status_code=401,
            detail="Missing or wrong API key: send Authorization: Bearer <GPUPRICES_API_KEY>",
            headers={"WWW-Authenticate": "Bearer"},
        )
