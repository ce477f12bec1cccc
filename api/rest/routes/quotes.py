"""Where a fine-tuning job is cheapest now: `POST /quotes`, `GET /offers/best`, `GET /models`.

Include this router before the `/offers` one, so that `/offers/best` is matched here even if
`/offers/{offer_id}` is ever added there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import TypeAdapter, model_validator

from api.rest.deps import ClockDep, ModelHubDep, OffloadDep, WarehouseDep
from api.rest.parameters import NO_QUERY, known_names_only
from api.rest.schemas_models import ModelsPage, models_page
from api.rest.schemas_quotes import (
    QuoteIn,
    QuoteOut,
    QuotesOut,
    TaskIn,
    WorkloadQuery,
    quotes_out,
)
from pipeline.workload.quotes import QuoteRequest, quote_offers
from pipeline.workload.task_files import task_file
from warehouse import Warehouse

__all__ = ["router"]

router = APIRouter(tags=["quotes"])


_QUOTES = TypeAdapter(list[QuoteOut])
_CHUNK = 256
"""Quotes serialized per call, few enough that the event loop is never held long."""
_EMPTY = b'"quotes":[]'


def _quote(warehouse: Warehouse, request: QuoteRequest, now: datetime) -> Response:
    """The `QuotesOut` body, its quotes serialized in chunks (and validated as built)."""
    out = quotes_out(quote_offers(warehouse, request, now=now))
    head = out.model_copy(update={"quotes": []}).model_dump_json().encode()
    quotes = b",".join(
        _QUOTES.dump_json(out.quotes[i : i + _CHUNK])[1:-1]
        for i in range(0, len(out.quotes), _CHUNK)
    )
    body = head.replace(_EMPTY, b'"quotes":[' + quotes + b"]", 1)
    return Response(body, media_type="application/json")


@router.post(
    "/quotes",
    response_model=QuotesOut,
    summary="Rank offers by total job cost",
    dependencies=[NO_QUERY],
)
async def post_quotes(
    body: QuoteIn,
    warehouse: WarehouseDep,
    hub: ModelHubDep,
    offload: OffloadDep,
    clock: ClockDep,
) -> Response:
    """Memory per GPU, the fewest GPUs, hours and total cost of the job on each current offer.

    Feasible offers come cheapest in total first (then fastest, then most memory headroom);
    `skipped` says why each other group of offers cannot run it. Spot offers are ranked only
    with `include_spot` (or `pricing=spot`), each with its interruption risk.
    """
    return await offload(lambda: _quote(warehouse, body.request(body.config, hub), clock()))


YAML = "application/yaml"


@router.post(
    "/quotes/task",
    response_class=Response,
    summary="A SkyPilot or dstack task file for one quote",
    responses={200: {"content": {YAML: {}}, "description": "The task file (YAML)"}},
    dependencies=[NO_QUERY],
)
async def post_quote_task(
    body: TaskIn, warehouse: WarehouseDep, hub: ModelHubDep, offload: OffloadDep
) -> Response:
    """The `POST /quotes` body plus `launcher` and `pick`: the task file that runs quote number
    `pick` (the cheapest by default) with the settings its estimate assumed, as
    `gpuprices quote --emit` prints it. An offer on a cloud the launcher cannot run on is a 422
    naming the clouds it can (choose another `pick`)."""

    def write() -> str:
        ranked = quote_offers(warehouse, body.request(body.config, hub), with_history=False)
        return task_file(ranked, body.launcher, body.pick)

    return Response(await offload(write), media_type=YAML)


class BestOfferQuery(WorkloadQuery):
    """The query of `GET /offers/best`: the workload and the offer filters."""

    _known_names_only = model_validator(mode="wrap")(known_names_only)


@router.get("/offers/best", response_model=QuotesOut, summary="The cheapest offer for a job")
async def best_offer(
    query: Annotated[BestOfferQuery, Query()],
    warehouse: WarehouseDep,
    hub: ModelHubDep,
    offload: OffloadDep,
    clock: ClockDep,
) -> Response:
    """`POST /quotes` as one line: `?model=Llama-3.1-8B&method=qlora&tokens=50M` (top=1)."""
    return await offload(lambda: _quote(warehouse, query.request(hub=hub), clock()))


@router.get(
    "/models", response_model=ModelsPage, summary="The model catalog", dependencies=[NO_QUERY]
)
def list_models() -> ModelsPage:
    """The catalog: each model with its total and active parameters, dense or MoE, context
    length and source. A quote also takes any Hugging Face id (`owner/name`: its config.json
    fetched once and kept) or a `config.json` itself."""
    return models_page()
