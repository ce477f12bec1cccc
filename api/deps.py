"""Dependencies the routes declare: the warehouse and the settings of this app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["SettingsDep", "WarehouseDep"]


def get_warehouse(request: Request) -> Warehouse:
    warehouse: Warehouse = request.app.state.warehouse
    return warehouse


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


WarehouseDep = Annotated[Warehouse, Depends(get_warehouse)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
