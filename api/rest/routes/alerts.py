"""Alert rules and their webhook deliveries: `/alerts`, behind the API key when one is set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import Field

from api.rest import schemas_alerts as out
from api.rest.deps import ClockDep, ResolverDep, SettingsDep, WarehouseDep, require_api_key
from api.rest.parameters import NO_QUERY, QueryModel
from api.rest.problems import problems
from pipeline import alerts as rules
from pipeline.alerts.service import alerts_page

__all__ = ["router"]

F = TypeVar("F", bound=Callable[..., Any])

router = APIRouter(
    prefix="/alerts",
    tags=["alerts"],
    dependencies=[Depends(require_api_key)],
    responses=problems(401, 403),
)


def _one_alert(method: str, path: str = "", **route: Any) -> Callable[[F], F]:
    """A route on one rule, `/alerts/{alert_id}` + `path`: 404 when there is no such rule."""
    return router.api_route(
        f"/{{alert_id}}{path}", methods=[method], responses=problems(404), **route
    )


@contextmanager
def _found() -> Iterator[None]:
    try:
        yield
    except rules.AlertNotFoundError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None


@router.post(
    "",
    status_code=201,
    response_model=out.AlertCreatedOut,
    summary="Create an alert rule",
    dependencies=[NO_QUERY],
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


MAX_ALERTS_PAGE = 500
"""Most rules one page of `GET /alerts` holds."""
MAX_OFFSET = 10_000_000


class AlertsQuery(QueryModel):
    """The query of `GET /alerts`: which page."""

    limit: int = Field(
        MAX_ALERTS_PAGE, ge=1, le=MAX_ALERTS_PAGE, description="Most rules, oldest first"
    )
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Rules to skip")


@router.get("", response_model=out.AlertsPage, summary="Alert rules, a page at a time")
def get_alerts(warehouse: WarehouseDep, query: Annotated[AlertsQuery, Query()]) -> out.AlertsPage:
    statuses, total = alerts_page(warehouse, query.limit, query.offset)
    alerts = [out.alert_out(status) for status in statuses]
    following = query.offset + len(alerts)
    return out.AlertsPage(
        alerts=alerts,
        count=len(alerts),
        total=total,
        next_offset=following if alerts and following < total else None,
    )


@_one_alert(
    "GET",
    response_model=out.AlertOut,
    summary="One alert rule and its state",
    dependencies=[NO_QUERY],
)
def get_one(alert_id: str, warehouse: WarehouseDep) -> out.AlertOut:
    with _found():
        return out.alert_out(rules.get_alert(warehouse, alert_id))


@_one_alert("DELETE", status_code=204, summary="Delete an alert rule", dependencies=[NO_QUERY])
def delete_one(alert_id: str, warehouse: WarehouseDep, clock: ClockDep) -> Response:
    """Its pending deliveries are cancelled; nothing more is sent for it."""
    with _found():
        rules.delete_alert(warehouse, alert_id, clock())
    return Response(status_code=204)


class DeliveriesQuery(QueryModel):
    """The query of `GET /alerts/{alert_id}/deliveries`."""

    limit: int = Field(100, ge=1, le=1000, description="Most deliveries, newest first")


@_one_alert(
    "GET", "/deliveries", response_model=out.DeliveriesPage, summary="Deliveries and attempts"
)
def get_deliveries(
    alert_id: str, warehouse: WarehouseDep, query: Annotated[DeliveriesQuery, Query()]
) -> out.DeliveriesPage:
    """Every attempt of each delivery: time, status code, latency and error."""
    with _found():
        logs = rules.alert_deliveries(warehouse, alert_id, query.limit)
    deliveries = [out.delivery_out(log) for log in logs]
    return out.DeliveriesPage(deliveries=deliveries, count=len(deliveries))


@_one_alert(
    "POST",
    "/test",
    response_model=out.DeliveryOut,
    summary="Send a test event",
    dependencies=[NO_QUERY],
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
