from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from api.rest.deps import CollectorDep, FreshnessDep, SettingsDep, WarehouseDep
from api.rest.problems import PROBLEM_MEDIA_TYPE, problem_response
from api.rest.schemas import HealthOut, ProviderFreshnessOut, ReadyOut
from warehouse import WarehouseError

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, summary="Liveness and database check")
async def healthz(warehouse: WarehouseDep, settings: SettingsDep) -> HealthOut:
    # One trip to a worker thread, for the database; a plain `def` route took eight (FastAPI
    # also validates a sync route's answer in the thread pool), each a wait for the GIL
    version = await run_in_threadpool(warehouse.schema_version)
    return HealthOut(status="ok", schema_version=version, demo=settings.demo)


@router.get(
    "/readyz",
    response_model=ReadyOut,
    summary="Readiness: database open, schedule running, provider freshness",
    responses={
        503: {
            "description": "Not ready: a problem detail that also carries the ReadyOut fields",
            "content": {
                PROBLEM_MEDIA_TYPE: {
                    "schema": {
                        "allOf": [
                            {"$ref": "#/components/schemas/Problem"},
                            {"$ref": "#/components/schemas/ReadyOut"},
                        ]
                    }
                }
            },
        }
    },
)
def readyz(
    warehouse: WarehouseDep,
    settings: SettingsDep,
    collector: CollectorDep,
    freshness: FreshnessDep,
) -> Response:
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
    if body.ready:
        return JSONResponse(body.model_dump(mode="json"))
    reason = "the database cannot be read" if not database else "the collection schedule stopped"
    return problem_response(503, f"Not ready: {reason}", extensions=body.model_dump(mode="json"))
