"""The price index (methodology v1), its explanation, its export, and `/market`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from api.rest.deps import ClockDep, WarehouseDep
from api.rest.parameters import scope_query
from api.rest.routes.history import FILE_RESPONSES, ExportFormatParam, file_response
from api.rest.schemas_index import IndexExplainOut, IndexOut, MarketOut
from pipeline.market.index import (
    INDEX_SCOPE,
    ExplainQuery,
    IndexQuery,
    explain_index,
    export_index,
    index_series,
)
from pipeline.market.outlook import MARKET_SCOPE, MarketQuery, market_outlook

router = APIRouter(tags=["index"])

IndexQueryDep = Annotated[IndexQuery, Depends(scope_query(IndexQuery, INDEX_SCOPE, "IndexParams"))]
ExplainQueryDep = Annotated[
    ExplainQuery, Depends(scope_query(ExplainQuery, INDEX_SCOPE, "ExplainParams"))
]
MarketQueryDep = Annotated[
    MarketQuery, Depends(scope_query(MarketQuery, MARKET_SCOPE, "MarketParams"))
]


@router.get("/index", response_model=IndexOut, summary="GPU price index, methodology v1")
def get_index(warehouse: WarehouseDep, clock: ClockDep, query: IndexQueryDep) -> IndexOut:
    """Per GPU and pricing: per UTC bucket, the median of each provider's cheapest available
    price per GPU-hour in its last good snapshot of the bucket. Gaps stay gaps."""
    return IndexOut.model_validate(index_series(warehouse, query, clock()))


@router.get(
    "/index/explain", response_model=IndexExplainOut, summary="Where an index value came from"
)
def get_index_explain(warehouse: WarehouseDep, query: ExplainQueryDep) -> IndexExplainOut:
    """Each provider's contribution to the bucket holding `t` (value, offer, snapshot) and each
    provider left out with its reason; the median of the contributions is the value."""
    return IndexExplainOut.model_validate(explain_index(warehouse, query))


@router.get(
    "/export/index.{fmt}",
    summary="The price index as CSV or Parquet",
    response_class=Response,
    responses=FILE_RESPONSES,
)
def export_index_file(
    fmt: ExportFormatParam, warehouse: WarehouseDep, clock: ClockDep, query: IndexQueryDep
) -> Response:
    body = export_index(warehouse, query, clock(), fmt)  # type: ignore[arg-type]  # the path's pattern admits csv and parquet only
    return file_response(body, "index", fmt)


@router.get("/market", response_model=MarketOut, summary="Rent now or wait")
def get_market(warehouse: WarehouseDep, clock: ClockDep, query: MarketQueryDep) -> MarketOut:
    """Where the latest hourly index sits against the daily index of the last `days` days:
    percentiles, availability, time below prices, volatility and the cheapest hour."""
    return MarketOut.model_validate(market_outlook(warehouse, query, clock()))
