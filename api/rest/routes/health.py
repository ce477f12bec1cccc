from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.rest.deps import CollectorDep, FreshnessDep, SettingsDep, WarehouseDep
from api.rest.schemas import HealthOut, ProviderFreshnessOut, ReadyOut
from warehouse import WarehouseError

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, summary="Liveness and database check")
def healthz(warehouse: WarehouseDep) -> HealthOut:
    return HealthOut(status="ok", schema_version=warehouse.schema_version())


@router.get(
    "/readyz",
    response_model=ReadyOut,
    summary="Readiness: database open, schedule running, provider freshness",
    responses={503: {"model": ReadyOut}},
)
def readyz(
    warehouse: WarehouseDep,
    settings: SettingsDep,
    collector: CollectorDep,
    freshness: FreshnessDep,
) -> JSONResponse:
    try:
        database = warehouse.schema_version() > 0
    except WarehouseError:
        database = False
    if not settings.scheduler or collector is None:
        scheduler = "disabled"
    else:
        scheduler = "running" if collector.running else "stopped"
    body = ReadyOut(
        ready=database and scheduler != "stopped",
        database=database,
        scheduler=scheduler,
        providers=[ProviderFreshnessOut.model_validate(f) for f in freshness],
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if body.ready else 503)
