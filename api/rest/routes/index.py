"""The price index (methodology v1), its explanation, its export, and `/market`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from api.rest.deps import ClockDep, WarehouseDep
from api.rest.parameters import query_model, revalidated
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

IndexParams = query_model(IndexQuery, INDEX_SCOPE, "IndexParams")
ExplainParams = query_model(ExplainQuery, INDEX_SCOPE, "ExplainParams")
MarketParams = query_model(MarketQuery, MARKET_SCOPE, "MarketParams")


def index_query(params: Annotated[IndexParams, Query()]) -> IndexQuery:
    return revalidated(IndexQuery, params)


IndexQueryDep = Annotated[IndexQuery, Depends(index_query)]


@router.get("/index", response_model=IndexOut, summary="GPU price index, methodology v1")
def get_index(warehouse: WarehouseDep, clock: ClockDep, query: IndexQueryDep) -> IndexOut:
    """Per GPU and pricing: per UTC bucket, the median of each provider's cheapest available
    price per GPU-hour in its last good snapshot of the bucket. Gaps stay gaps."""
    return IndexOut.model_validate(index_series(warehouse, query, clock()))


@router.get(
    "/index/explain", response_model=IndexExplainOut, summary="Where an index value came from"
)
def get_index_explain(
    warehouse: WarehouseDep, params: Annotated[ExplainParams, Query()]
) -> IndexExplainOut:
    """Each provider's contribution to the bucket holding `t` (value, offer, snapshot) and each
    provider left out with its reason; the median of the contributions is the value."""
    query = revalidated(ExplainQuery, params)
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
    body = export_index(warehouse, query, clock(), fmt)  # type: ignore[arg-type]
    return file_response(body, "index", fmt)


@router.get("/market", response_model=MarketOut, summary="Rent now or wait")
def get_market(
    warehouse: WarehouseDep, clock: ClockDep, params: Annotated[MarketParams, Query()]
) -> MarketOut:
    """Where the latest hourly index sits against the daily index of the last `days` days:
    percentiles, availability, time below prices, volatility and the cheapest hour."""
    query = revalidated(MarketQuery, params)
    return MarketOut.model_validate(market_outlook(warehouse, query, clock()))
