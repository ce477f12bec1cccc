"""`GET /`: the page people look at, rendered on the server from the same pipeline functions."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from api.rest.deps import ClockDep, FreshnessDep, ModelHubDep, OfferServerDep, SettingsDep
from api.web import PageQuery, mount_static, page_data, templates

__all__ = ["mount_static", "router"]

router = APIRouter(tags=["web"])


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(
    request: Request,
    server: OfferServerDep,
    settings: SettingsDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    hub: ModelHubDep,
) -> HTMLResponse:
    """Cheapest offers, price history, workload quotes and provider health, as one HTML page;
    its offers from the same in-memory answer as `/offers`."""
    query = PageQuery.from_params(request.query_params)
    data = page_data(server, settings, query, clock(), freshness, hub)
    status = 422 if data.errors or query.problems else 200
    context = {"page": data, "demo": settings.demo}
    return templates().TemplateResponse(request, "page.html", context, status_code=status)
