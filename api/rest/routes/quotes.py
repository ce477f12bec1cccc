"""Where a fine-tuning job is cheapest now: `POST /quotes`, `GET /offers/best`, `GET /models`.

Include this router before the `/offers` one, so that `/offers/best` is matched here even if
`/offers/{offer_id}` is ever added there.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.rest.deps import WarehouseDep
from api.rest.schemas_quotes import (
    ModelsPage,
    QuoteIn,
    QuotesOut,
    WorkloadQuery,
    models_page,
    quotes_out,
)
from pipeline.workload.quotes import quote_offers

__all__ = ["router"]

router = APIRouter(tags=["quotes"])


@router.post("/quotes", response_model=QuotesOut, summary="Rank offers by total job cost")
def post_quotes(body: QuoteIn, warehouse: WarehouseDep) -> QuotesOut:
    """Memory per GPU, the fewest GPUs, hours and total cost of the job on each current offer.

    Feasible offers come cheapest in total first (then fastest, then most memory headroom);
    `skipped` says why each other group of offers cannot run it. Spot offers are ranked only
    with `include_spot` (or `pricing=spot`), each with its interruption risk.
    """
    return quotes_out(quote_offers(warehouse, body.request(body.config)))


@router.get("/offers/best", response_model=QuotesOut, summary="The cheapest offer for a job")
def best_offer(query: Annotated[WorkloadQuery, Query()], warehouse: WarehouseDep) -> QuotesOut:
    """`POST /quotes` as one line: `?model=Llama-3.1-8B&method=qlora&tokens=50M` (top=1)."""
    return quotes_out(quote_offers(warehouse, query.request()))


@router.get("/models", response_model=ModelsPage, summary="Known model architectures")
def list_models() -> ModelsPage:
    """Models known by name; any other dense decoder can be given as its `config.json`."""
    return models_page()
