from __future__ import annotations

from fastapi import APIRouter

from api.deps import WarehouseDep
from api.schemas import HealthOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, summary="Liveness and database check")
def healthz(warehouse: WarehouseDep) -> HealthOut:
    return HealthOut(status="ok", schema_version=warehouse.schema_version())
