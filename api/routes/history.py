from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from api import parameters as p
from api.deps import ClockDep, SettingsDep, WarehouseDep
from api.routes.offers import OfferQueryDep, split_providers
from api.schemas import HistoryOut
from pipeline.history import (
    HistoryQuery,
    check_as_of,
    export_history,
    export_offers,
    price_history_json,
)

router = APIRouter(tags=["history"])

MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
_FILE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The rows as a CSV or Parquet file (every row: exports are not capped)",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.apache.parquet": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


def history_query(
    gpu: Annotated[
        str,
        Query(min_length=1, max_length=p.MAX_NAME_CHARS, description="Id, family or any spelling"),
    ],
    interval: p.IntervalParam = "1h",
    provider: p.ProviderParam = None,
    pricing: p.PricingParam = None,
    region: p.RegionParam = None,
    since: p.SinceParam = None,
    until: p.UntilParam = None,
    country: p.CountryParam = None,
    continent: p.ContinentParam = None,
    jurisdiction: p.JurisdictionParam = None,
) -> HistoryQuery:
    return HistoryQuery(
        gpu=gpu,
        interval=interval,
        providers=split_providers(provider),
        pricing=str(pricing) if pricing else None,
        region=region,
        since=since,
        until=until,
        countries=tuple(country or ()),
        continent=continent,
        jurisdiction=jurisdiction,
    )


HistoryQueryDep = Annotated[HistoryQuery, Depends(history_query)]


@router.get("/prices/history", response_model=HistoryOut, summary="How prices moved")
def get_history(warehouse: WarehouseDep, clock: ClockDep, query: HistoryQueryDep) -> Response:
    """Per provider x pricing: min/p25/median/max USD per GPU-hour per bucket; gaps stay gaps.

    The body is built from DuckDB's JSON (schema: `HistoryOut`), not through Python objects.
    """
    body = price_history_json(warehouse, query, clock())
    return Response(body, media_type="application/json")


def _file(body: bytes, name: str, fmt: str) -> Response:
    return Response(
        body,
        media_type=MEDIA_TYPES[fmt],
        headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'},
    )


@router.get(
    "/export/offers.{fmt}",
    summary="Current (or as_of) offers as CSV or Parquet",
    response_class=Response,
    responses=_FILE_RESPONSES,
)
def export_offers_file(
    fmt: Annotated[str, p.Path(pattern="^(csv|parquet)$")],
    warehouse: WarehouseDep,
    settings: SettingsDep,
    clock: ClockDep,
    query: OfferQueryDep,
) -> Response:
    if query.as_of is not None:
        check_as_of(query.as_of, clock(), settings.retention)
    return _file(export_offers(warehouse, query, fmt), "offers", fmt)  # type: ignore[arg-type]


@router.get(
    "/export/history.{fmt}",
    summary="Price history as CSV or Parquet",
    response_class=Response,
    responses=_FILE_RESPONSES,
)
def export_history_file(
    fmt: Annotated[str, p.Path(pattern="^(csv|parquet)$")],
    warehouse: WarehouseDep,
    clock: ClockDep,
    query: HistoryQueryDep,
) -> Response:
    body = export_history(warehouse, query, clock(), fmt)  # type: ignore[arg-type]
    return _file(body, "history", fmt)
