from __future__ import annotations

import time
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from api.rest.deps import CollectorDep, FreshnessDep, SettingsDep, WarehouseDep
from api.rest.problems import PROBLEM_MEDIA_TYPE, problem_response
from api.rest.schemas import HealthOut, ProviderFreshnessOut, ReadyOut
from warehouse import WarehouseError

router = APIRouter(tags=["health"])


DATABASE_CHECK_TTL_S = 1.0
"""How long one database read answers `/healthz` (a probe every second reads it once)."""


@dataclass(frozen=True, slots=True)
class _Checked:
    at: float
    schema_version: int


@router.get("/healthz", response_model=HealthOut, summary="Liveness and database check")
async def healthz(request: Request, warehouse: WarehouseDep, settings: SettingsDep) -> HealthOut:
    """The database read (in a worker thread) at most once a second; in between, the event loop
    answers alone, so a busy server still answers its liveness probe at once."""
    checked: _Checked | None = getattr(request.app.state, "database_checked", None)
    if checked is None or time.monotonic() - checked.at >= DATABASE_CHECK_TTL_S:
        checked = _Checked(time.monotonic(), await run_in_threadpool(warehouse.schema_version))
        request.app.state.database_checked = checked
    return HealthOut(status="ok", schema_version=checked.schema_version, demo=settings.demo)


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
