"""`GET /offers`: current offers (or as of a time) as a JSON page or NDJSON lines.

The query string is read into the one model of the question (`OffersParams`, read with
pydantic in the route and documented by FastAPI: `api.rest.parameters`); the answer is offers
from the pipeline (`OfferServer.answer`), written by `api.rest.offers_json`. A question over
the copy in force, once its offers are written, is answered on the event loop (a selection over
arrays and a join of bytes, quicker than a thread's round trip); anything else runs in a worker
thread (`OffloadDep`). A large page is sent a piece at a time, so the loop serves other
requests between pieces.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import Field, TypeAdapter, model_validator
from starlette.datastructures import State

from api.rest.deps import get_freshness, get_offload
from api.rest.offers_json import json_array, ndjson_lines, prepare, ready
from api.rest.parameters import MAX_OFFERS_PAGE, documented_query, known_names_only, read_query
from api.rest.schemas import OffersPage, ProviderFreshnessOut
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OffersAnswer, OfferServer
from pipeline.timeparse import Duration

router = APIRouter(prefix="/offers", tags=["offers"])
_PROVIDERS = TypeAdapter(list[ProviderFreshnessOut])
_PROVIDER = TypeAdapter(ProviderFreshnessOut)
NDJSON = "application/x-ndjson"


class OffersParams(OfferQuery):
    """The query of `GET /offers`: which offers, their order and number, and freshness."""

    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_OFFERS_PAGE,
        description=f"Most offers to return; a JSON page holds at most {MAX_OFFERS_PAGE:,} "
        "(the default); NDJSON (Accept: application/x-ndjson) and exports hold every row "
        "unless limited",
    )
    max_age: Duration | None = Field(
        None,
        description="Leave out providers whose snapshot is older: 30m, 2h, PT2H (max 10 years)",
    )

    _known_names_only = model_validator(mode="wrap")(known_names_only)


class ExportParams(OfferQuery):
    """The query of `GET /export/offers.{fmt}`: the same filters without `max_age` and the
    page cap."""

    _known_names_only = model_validator(mode="wrap")(known_names_only)


_read_offers_query = read_query(OffersParams)
"""The question of `GET /offers`, read in the route (see `api.rest.parameters`)."""
OfferQueryDep = Annotated[ExportParams, Depends(read_query(ExportParams))]
"""The question of an export of offers (the route documents it: `documented_query`)."""


@router.get(
    "",
    response_model=OffersPage,
    summary="What is on offer now (or as of a time)",
    responses={200: {"content": {NDJSON: {"schema": {"type": "string"}}}}},
    openapi_extra=documented_query(OffersParams),
)
async def list_offers(request: Request) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale. A page
    holds at most `limit` offers, 10,000 at most (and by default). With
    `Accept: application/x-ndjson` the offers come one JSON object per line, streamed, every
    matching offer unless `limit` says fewer.
    """
    query = await _read_offers_query(request)
    state = request.app.state  # the app's own, read directly: each dependency costs per request
    server, clock = state.offer_server, state.clock
    freshness = await get_freshness(server, clock, state.collector)
    offload = await get_offload(request)
    ndjson = NDJSON in request.headers.get("accept", "")
    if not ndjson:
        query = query.model_copy(update={"limit": query.limit or MAX_OFFERS_PAGE})
    answer = server.answer(query, clock(), freshness, query.max_age, ready_only=True)
    if answer is None:
        answer = await offload(_prepared, server, query, clock(), freshness)
    elif not ready(answer):  # answered already: only its offers to write
        await offload(prepare, answer)
    if ndjson:
        return StreamingResponse(_sent(ndjson_lines(answer, PIECE_ROWS)), media_type=NDJSON)
    pieces = _page(answer, _providers_json(state, freshness, answer.providers))
    if answer.count <= IN_ONE_PIECE_ROWS:
        return Response(b"".join(pieces), media_type="application/json")
    return StreamingResponse(_sent(pieces), media_type="application/json")


PIECE_ROWS = 256
"""Offers per piece of an answer sent a piece at a time (about 200 KB)."""
IN_ONE_PIECE_ROWS = 1000
"""Pages of up to this many offers are sent whole; larger ones a piece at a time."""


def _prepared(
    server: OfferServer,
    query: OffersParams,
    now: datetime,
    freshness: list[ProviderFreshness],
) -> OffersAnswer:
    """The answer, its offers written (in a worker thread)."""
    answer = server.answer(query, now, freshness, query.max_age)
    assert answer is not None  # only a ready-only question goes unanswered
    prepare(answer)
    return answer


def _page(answer: OffersAnswer, providers: bytes) -> Iterator[bytes]:
    """`OffersPage` as pydantic serializes it, a piece at a time (`providers`: the answer's
    providers as JSON, `_providers_json`)."""
    yield b'{"offers":'
    yield from json_array(answer, PIECE_ROWS)
    yield b',"count":%d,"providers":%s}' % (answer.count, providers)


def _providers_json(
    state: State, freshness: list[ProviderFreshness], reported: list[ProviderFreshness]
) -> bytes:
    """`reported` as JSON: each provider of `freshness` (made once a second:
    `OfferServer.freshness`) written once while that list is in force, kept on the app's state;
    an as_of answer's own freshness written as asked."""
    held = getattr(state, "providers_written", None)
    if held is None or held[0] is not freshness:
        out = _PROVIDERS.validate_python(freshness, from_attributes=True)
        written = {id(f): _PROVIDER.dump_json(o) for f, o in zip(freshness, out, strict=True)}
        whole = b"[" + b",".join(written.values()) + b"]"
        held = state.providers_written = (freshness, written, whole)  # keeps each `id` its own
    if reported == freshness:  # every provider (equal lists: the same objects, compared as such)
        return held[2]
    if all(id(f) in held[1] for f in reported):
        return b"[" + b",".join(held[1][id(f)] for f in reported) + b"]"
    return _PROVIDERS.dump_json(_PROVIDERS.validate_python(reported, from_attributes=True))


async def _sent(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    """`pieces` as made, the event loop serving other requests between them."""
    for piece in pieces:
        yield piece
        await asyncio.sleep(0)
