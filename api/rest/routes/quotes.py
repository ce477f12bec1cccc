"""Where a fine-tuning job is cheapest now: `POST /quotes`, `GET /offers/best`, `GET /models`.

Include this router before the `/offers` one, so that `/offers/best` is matched here even if
`/offers/{offer_id}` is ever added there.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import TypeAdapter

from api.rest.deps import OffloadDep, WarehouseDep
from api.rest.schemas_quotes import (
    ModelsPage,
    QuoteIn,
    QuoteOut,
    QuotesOut,
    WorkloadQuery,
    models_page,
    quotes_out,
)
from pipeline.workload.quotes import QuoteRequest, quote_offers
from warehouse import Warehouse

__all__ = ["router"]

router = APIRouter(tags=["quotes"])


_QUOTES = TypeAdapter(list[QuoteOut])
_CHUNK = 256
"""Quotes serialized per call, few enough that the event loop is never held long."""
_EMPTY = b'"quotes":[]'


def _quote(warehouse: Warehouse, request: QuoteRequest) -> Response:
    """The `QuotesOut` body, its quotes serialized in chunks (and validated as built)."""
    out = quotes_out(quote_offers(warehouse, request))
    head = out.model_copy(update={"quotes": []}).model_dump_json().encode()
    quotes = b",".join(
        _QUOTES.dump_json(out.quotes[i : i + _CHUNK])[1:-1]
        for i in range(0, len(out.quotes), _CHUNK)
    )
    body = head.replace(_EMPTY, b'"quotes":[' + quotes + b"]", 1)
    return Response(body, media_type="application/json")


@router.post("/quotes", response_model=QuotesOut, summary="Rank offers by total job cost")
async def post_quotes(body: QuoteIn, warehouse: WarehouseDep, offload: OffloadDep) -> Response:
    """Memory per GPU, the fewest GPUs, hours and total cost of the job on each current offer.

    Feasible offers come cheapest in total first (then fastest, then most memory headroom);
    `skipped` says why each other group of offers cannot run it. Spot offers are ranked only
    with `include_spot` (or `pricing=spot`), each with its interruption risk.
    """
    return await offload(lambda: _quote(warehouse, body.request(body.config)))


@router.get("/offers/best", response_model=QuotesOut, summary="The cheapest offer for a job")
async def best_offer(
    query: Annotated[WorkloadQuery, Query()], warehouse: WarehouseDep, offload: OffloadDep
) -> Response:
    """`POST /quotes` as one line: `?model=Llama-3.1-8B&method=qlora&tokens=50M` (top=1)."""
    return await offload(lambda: _quote(warehouse, query.request()))


@router.get("/models", response_model=ModelsPage, summary="Known model architectures")
def list_models() -> ModelsPage:
    """Models known by name; any other dense decoder can be given as its `config.json`."""
    return models_page()
