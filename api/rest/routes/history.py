from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response
from pydantic import Field

from api.rest.deps import ClockDep, FreshnessDep, OfferServerDep, WarehouseDep
from api.rest.observations import pack_observations
from api.rest.parameters import QueryModel, documented_query, scope_query
from api.rest.routes.offers import ExportParams, OfferQueryDep
from api.rest.schemas import HistoryOut
from pipeline.market.history import (
    HISTORY_SCOPE,
    HistoryQuery,
    export_history,
    export_offers,
    price_history_json,
)
from pipeline.timeparse import UtcDateTime

router = APIRouter(tags=["history"])

MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
ExportFormatParam = Annotated[str, Path(pattern="^(csv|parquet)$", description="csv or parquet")]


FILE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The rows as a CSV or Parquet file (every row: exports are not capped)",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


HistoryQueryDep = Annotated[
    HistoryQuery, Depends(scope_query(HistoryQuery, HISTORY_SCOPE, "HistoryParams"))
]
"""The query of `/prices/history` and its export: the scope fields history honours."""


@router.get("/prices/history", response_model=HistoryOut, summary="How prices moved")
def get_history(warehouse: WarehouseDep, clock: ClockDep, query: HistoryQueryDep) -> Response:
    """Per provider x pricing: min/p25/median/max USD per GPU-hour per bucket; gaps stay gaps.

    The body is built from DuckDB's JSON (schema: `HistoryOut`), not through Python objects.
    """
    body = price_history_json(warehouse, query, clock())
    return Response(body, media_type="application/json")


def file_response(body: bytes, name: str, fmt: str) -> Response:
    return Response(
        body,
        media_type=MEDIA_TYPES[fmt],
        headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'},
    )


@router.get(
    "/export/offers.{fmt}",
    summary="Current (or as_of) offers as CSV or Parquet",
    response_class=Response,
    responses=FILE_RESPONSES,
    openapi_extra=documented_query(ExportParams),
)
def export_offers_file(
    fmt: ExportFormatParam,
    warehouse: WarehouseDep,
    server: OfferServerDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    query: OfferQueryDep,
) -> Response:
    answer = server.answer(query, clock(), freshness)
    assert answer is not None  # only a ready-only question goes unanswered
    body = export_offers(warehouse, answer.table, fmt)  # type: ignore[arg-type]  # the path's pattern admits csv and parquet only
    return file_response(body, "offers", fmt)


@router.get(
    "/export/history.{fmt}",
    summary="Price history as CSV or Parquet",
    response_class=Response,
    responses=FILE_RESPONSES,
)
def export_history_file(
    fmt: ExportFormatParam,
    warehouse: WarehouseDep,
    clock: ClockDep,
    query: HistoryQueryDep,
) -> Response:
    body = export_history(warehouse, query, clock(), fmt)  # type: ignore[arg-type]  # the path's pattern admits csv and parquet only
    return file_response(body, "history", fmt)


class ObservationsQuery(QueryModel):
    """The query of `GET /export/observations.tar`: the time range."""

    since: UtcDateTime = Field(description="Start (inclusive), ISO 8601")
    until: UtcDateTime | None = Field(None, description="End (exclusive), ISO 8601; default now")


@router.get(
    "/export/observations.tar",
    summary="Raw observations as Hive-partitioned Parquet, in a tar archive",
    response_class=Response,
    responses={200: {"content": {"application/x-tar": {"schema": {"type": "string"}}}}},
)
def export_observations(
    warehouse: WarehouseDep, clock: ClockDep, query: Annotated[ObservationsQuery, Query()]
) -> Response:
    """What `gpuprices export` writes (`date=YYYY-MM-DD/provider=NAME/*.parquet`), as one
    archive: the command unpacks it when it asks a server."""
    body = pack_observations(warehouse, query.since, query.until or clock())
    return Response(
        body,
        media_type="application/x-tar",
        headers={"Content-Disposition": 'attachment; filename="observations.tar"'},
    )
