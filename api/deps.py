"""Dependencies the routes declare: the warehouse, settings, clock and schedule of this app."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request

from pipeline.freshness import ProviderFreshness, provider_freshness
from pipeline.schedule import Collector
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["ClockDep", "CollectorDep", "FreshnessDep", "SettingsDep", "WarehouseDep"]


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
