"""Alert rules and their webhook deliveries: `/alerts`, behind the API key when one is set."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from api.rest import schemas_alerts as out
from api.rest.deps import ClockDep, ResolverDep, SettingsDep, WarehouseDep, require_api_key
from api.rest.problems import problems
from pipeline import alerts as rules

__all__ = ["router"]

router = APIRouter(
    prefix="/alerts",
    tags=["alerts"],
    dependencies=[Depends(require_api_key)],
    responses=problems(401),
)


@contextmanager
def _found() -> Iterator[None]:
    try:
        yield
    except rules.AlertNotFoundError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None


@router.post(
    "", status_code=201, response_model=out.AlertCreatedOut, summary="Create an alert rule"
)
def post_alert(
    body: out.AlertIn,
    warehouse: WarehouseDep,
    settings: SettingsDep,
    clock: ClockDep,
    resolver: ResolverDep,
) -> out.AlertCreatedOut:
    """Store a rule; it is evaluated after every collection. The answer holds the signing
    `secret`, shown this once. Unsafe targets (non-https, private, metadata) are 422."""
    return out.created_out(
        rules.create_alert(warehouse, body.spec(), settings, clock(), resolver=resolver)
    )


@router.get("", response_model=out.AlertsPage, summary="Every alert rule")
def get_alerts(warehouse: WarehouseDep) -> out.AlertsPage:
    alerts = [out.alert_out(status) for status in rules.list_alerts(warehouse)]
    return out.AlertsPage(alerts=alerts, count=len(alerts))


@router.get(
    "/{alert_id}",
    response_model=out.AlertOut,
    summary="One alert rule and its state",
    responses=problems(404),
)
def get_one(alert_id: str, warehouse: WarehouseDep) -> out.AlertOut:
    with _found():
        return out.alert_out(rules.get_alert(warehouse, alert_id))


@router.delete(
    "/{alert_id}", status_code=204, summary="Delete an alert rule", responses=problems(404)
)
def delete_one(alert_id: str, warehouse: WarehouseDep, clock: ClockDep) -> Response:
    """Its pending deliveries are cancelled; nothing more is sent for it."""
    with _found():
        rules.delete_alert(warehouse, alert_id, clock())
    return Response(status_code=204)


@router.get(
    "/{alert_id}/deliveries",
    response_model=out.DeliveriesPage,
    summary="Deliveries and attempts",
    responses=problems(404),
)
def get_deliveries(
    alert_id: str,
    warehouse: WarehouseDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most deliveries, newest first")] = 100,
) -> out.DeliveriesPage:
    """Every attempt of each delivery: time, status code, latency and error."""
    with _found():
        logs = rules.alert_deliveries(warehouse, alert_id, limit)
    deliveries = [out.delivery_out(log) for log in logs]
    return out.DeliveriesPage(deliveries=deliveries, count=len(deliveries))


@router.post(
    "/{alert_id}/test",
    response_model=out.DeliveryOut,
    summary="Send a test event",
    responses=problems(404),
)
def post_test(
    alert_id: str,
    warehouse: WarehouseDep,
    settings: SettingsDep,
    clock: ClockDep,
    resolver: ResolverDep,
) -> out.DeliveryOut:
    """Store an `alert.test` event and make its first attempt now (retried if it fails)."""
    with _found():
        log = rules.send_test(warehouse, settings, alert_id, now=clock, resolver=resolver)
    return out.delivery_out(log)
