from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Generic, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from api.rest.deps import CollectorDep, FreshnessDep, SettingsDep, WarehouseDep
from api.rest.parameters import NO_QUERY
from api.rest.problems import PROBLEM_MEDIA_TYPE, problem_response
from api.rest.schemas import HealthOut, ProviderFreshnessOut, ReadyOut
from warehouse import Warehouse, WarehouseError

router = APIRouter(tags=["health"])
T = TypeVar("T")


DATABASE_CHECK_TTL_S = 1.0
"""How long one database read answers `/healthz` (a probe every second reads it once)."""


@dataclass(frozen=True, slots=True)
class _Checked(Generic[T]):
    """What a check answered, and when (`time.monotonic()`)."""

    at: float
    answer: T


DATA_PATH_CHECK_TTL_S = 5.0
"""How long one probe of the lake's data path (a listing) answers `/readyz`."""
DATA_PATH_PROBE_TIMEOUT_S = 5.0
"""How long `/readyz` waits for that listing: past it the data path counts as unreachable (the
probe still running is reused by the next request, never a second one alongside)."""
_PROBE_LOCK = threading.Lock()


def _probe(warehouse: Warehouse, answer: Future[str | None]) -> None:
    try:
        answer.set_result(warehouse.data_path_problem())
    except WarehouseError as exc:
        answer.set_result(str(exc))


def _data_path_problem(request: Request, warehouse: Warehouse) -> str | None:
    """Why the lake's data path cannot be read (None: it can), probed at most once per
    `DATA_PATH_CHECK_TTL_S` and waited for at most `DATA_PATH_PROBE_TIMEOUT_S`."""
    if warehouse.lake is None:
        return None
    state = request.app.state
    checked: _Checked[str | None] | None = getattr(state, "data_path_checked", None)
    if checked is not None and time.monotonic() - checked.at < DATA_PATH_CHECK_TTL_S:
        return checked.answer
    with _PROBE_LOCK:
        pending: Future[str | None] | None = getattr(state, "data_path_probe", None)
        if pending is None or pending.done():
            pending = Future()
            state.data_path_probe = pending
            threading.Thread(
                target=_probe, args=(warehouse, pending), name="readyz-data-path", daemon=True
            ).start()
    try:
        problem = pending.result(timeout=DATA_PATH_PROBE_TIMEOUT_S)
    except FutureTimeout:
        problem = (
            f"the lake's data path {warehouse.lake.data_path} did not answer a listing within "
            f"{DATA_PATH_PROBE_TIMEOUT_S:g} s"
        )
    state.data_path_checked = _Checked(time.monotonic(), problem)
    return problem


@router.get(
    "/healthz",
    response_model=HealthOut,
    summary="Liveness and database check",
    dependencies=[NO_QUERY],
)
async def healthz(request: Request, warehouse: WarehouseDep, settings: SettingsDep) -> HealthOut:
    """The database read (in a worker thread) at most once a second; in between, the event loop
    answers alone, so a busy server still answers its liveness probe at once."""
    checked: _Checked[int] | None = getattr(request.app.state, "database_checked", None)
    if checked is None or time.monotonic() - checked.at >= DATABASE_CHECK_TTL_S:
        checked = _Checked(time.monotonic(), await run_in_threadpool(warehouse.schema_version))
        request.app.state.database_checked = checked
    return HealthOut(status="ok", schema_version=checked.answer, demo=settings.demo)


@router.get(
    "/readyz",
    response_model=ReadyOut,
    summary="Readiness: database, lake data path, schedule running, provider freshness",
    dependencies=[NO_QUERY],
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
    request: Request,
    warehouse: WarehouseDep,
    settings: SettingsDep,
    collector: CollectorDep,
    freshness: FreshnessDep,
) -> Response:
    try:
        database = warehouse.schema_version() > 0
    except WarehouseError:
        database = False
    problem = _data_path_problem(request, warehouse) if database else None
    data_path = None if warehouse.lake is None or not database else problem is None
    if not settings.scheduler or collector is None:
        scheduler = "disabled"
    else:
        scheduler = "running" if collector.running else "stopped"
    body = ReadyOut(
        ready=database and data_path is not False and scheduler != "stopped",
        database=database,
        data_path=data_path,
        scheduler=scheduler,
        providers=[ProviderFreshnessOut.model_validate(f) for f in freshness],
    )
    if body.ready:
        return JSONResponse(body.model_dump(mode="json"))
    if not database:
        reason = "the database cannot be read"
    elif problem is not None:
        reason = problem
    else:
        reason = "the collection schedule stopped"
    return problem_response(503, f"Not ready: {reason}", extensions=body.model_dump(mode="json"))
