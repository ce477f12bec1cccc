from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import Field, TypeAdapter, ValidationError
from starlette.types import Receive, Scope, Send

from api.rest.deps import (
    ClockDep,
    FreshnessDep,
    OfferServerDep,
    Offload,
    OffloadDep,
    get_freshness,
)
from api.rest.parameters import MAX_OFFERS_PAGE, query_model
from api.rest.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.errors import PipelineError
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OffersAnswer, OfferServer, reported_providers
from pipeline.market.written import EncodedAnswer, RowEncoder
from pipeline.timeparse import Duration

router = APIRouter(prefix="/offers", tags=["offers"])
_PROVIDERS = TypeAdapter(list[ProviderFreshnessOut])
NDJSON = "application/x-ndjson"
_NDJSON_BYTES = NDJSON.encode()


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


_OFFERS_QUERY = query_model(OffersParams)
OffersParamsDep = Annotated[OffersParams, Depends(_OFFERS_QUERY.read)]
OfferQueryDep = Annotated[OfferQuery, Query()]
"""The same filters without `max_age` and the page cap, for the exports."""

# A page already made is joined on the event loop; any other work (a selection over up to
# 100,000 offers, its JSON) runs off it, one heavy call at a time (`OffloadDep`).
_CHUNK_ROWS = 128
"""Offers validated and serialised per call (a few ms of GIL each)."""


@router.get(
    "",
    response_model=OffersPage,
    summary="What is on offer now (or as of a time)",
    responses={200: {"content": {NDJSON: {"schema": {"type": "string"}}}}},
    openapi_extra=_OFFERS_QUERY.openapi,
)
async def list_offers(
    server: OfferServerDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    query: OffersParamsDep,
    offload: OffloadDep,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale. A page
    holds at most `limit` offers, 10,000 at most (and by default). With
    `Accept: application/x-ndjson` the offers come one JSON object per line, streamed, every
    matching offer unless `limit` says fewer.
    """
    if accept is not None and NDJSON in accept:
        return await _stream(server, clock, freshness, query, offload)
    query = query.model_copy(update={"limit": query.limit or MAX_OFFERS_PAGE})
    if query.max_age is None and query.as_of is None:
        return await _current_page(server, clock, freshness, query, offload)
    answer = await offload(server.encoded, query, freshness, OFFER_JSON, query.max_age, now=clock())
    if answer is not None:
        return _JsonPage(await offload(_encoded_page, answer))
    rows = await offload(server.answer, query, clock(), freshness, query.max_age)
    offers_json, count = await offload(_offers_part, rows)
    return _page(offers_json, count, rows.providers)


_OfferPart = tuple[bytes, int]
PIECE_ROWS = 256
"""Offers per piece of a page sent a piece at a time (about 200 KB)."""
IN_ONE_PIECE_ROWS = 1000
"""Pages of up to this many offers are sent whole; larger ones a piece at a time."""


async def _current_page(
    server: OfferServer,
    clock: Callable[[], datetime],
    freshness: list[ProviderFreshness],
    query: OffersParams,
    offload: Offload,
) -> Response:
    """The page of current offers. Once the offers' JSON is made for the snapshots in force,
    a page is a selection over arrays and a join of bytes: made here, on the event loop
    (quicker than a thread's round trip), a large one sent a piece at a time. Before that, and
    for a `region` (answered by the warehouse), it is made in a worker thread and kept for the
    snapshots in force, for the stale providers it was made with."""
    answer = server.encoded(query, freshness, OFFER_JSON, ready_only=True)
    if answer is not None:
        if answer.count > IN_ONE_PIECE_ROWS:
            return _PageInPieces(answer)
        return _JsonPage(_encoded_page(answer))
    key = (query, frozenset(f.provider for f in freshness if f.stale))
    part = server.peek(key)
    if part is None:
        now = clock()
        part = await offload(server.derived, key, lambda: _part(server, query, now, freshness))
    offers_json, count = part
    return _page(offers_json, count, reported_providers(freshness, query.providers))


_A_PAGE = {"limit": MAX_OFFERS_PAGE}
"""A JSON page holds `MAX_OFFERS_PAGE` offers unless `limit` says fewer."""


async def answer_common_question(app: FastAPI, scope: Scope) -> Response | None:
    """`GET /offers` for the common question (current offers, a JSON page), answered before
    the middleware stack, FastAPI's routing and dependencies (see `api.app.GpuPricesApp`), by
    the route's own `_current_page`: their per-request cost was a third of a new question's.

    None for anything else (a parameter the model refuses, `as_of`, `max_age`, NDJSON, an
    unknown GPU or provider, the app's first request): the route answers or refuses it.
    """
    state = app.state
    server: OfferServer | None = getattr(state, "offer_server", None)
    offload: Offload | None = getattr(state, "offload", None)
    if server is None or offload is None:
        return None
    if any(name == b"accept" and _NDJSON_BYTES in value for name, value in scope["headers"]):
        return None
    try:  # an unknown name or a bad value: the route names them
        query = _OFFERS_QUERY.parse_raw(scope["query_string"], _A_PAGE)
    except ValidationError:
        return None
    if query is None or query.max_age is not None or query.as_of is not None:
        return None
    freshness = await get_freshness(server, state.clock, state.collector)  # as the route's
    try:
        return await _current_page(server, state.clock, freshness, query, offload)
    except PipelineError:  # the route says why, as a problem detail
        return None


_OFFER_KEYS = tuple(OfferOut.model_fields)  # the warehouse's columns in order, then `stale`


def write_offers(rows: list[dict[str, Any]], keys: tuple[str, ...] = _OFFER_KEYS) -> list[bytes]:
    """Each row (an offer with at least `keys`) as `OfferOut` serializes it (its `keys`):
    orjson writes the same bytes five times faster than pydantic (tests/api/rest/routes/
    test_offers_json.py holds it to pydantic's on recorded answers, current and as of a time).
    Rows of exactly `keys`, in order (the warehouse's columns, then `stale`), are written as
    they are; others through a dict of `keys`."""
    if not rows:
        return []
    if tuple(rows[0]) != keys:  # the rows of one query share their keys
        rows = [{k: row[k] for k in keys} for row in rows]
    return _split_array(orjson.dumps(rows, option=orjson.OPT_UTC_Z), keys[0])


def _split_array(array: bytes, first_key: str) -> list[bytes]:
    """The objects of a JSON array of flat objects that all begin with `first_key`, each as its
    own bytes. One `orjson.dumps` of the list costs a quarter of one call per row (~1 µs an
    offer instead of ~4). A boundary is `},{"<first_key>":`, which no string holds: inside a
    string a quote is escaped (`\"`), so `{"` never appears there unescaped."""
    if array == b"[]":
        return []
    boundary = b'},{"' + first_key.encode() + b'":'
    pieces = array[1:-2].split(boundary)  # without "[" and the last "}]"
    head = boundary[2:]
    return [pieces[0] + b"}", *(head + piece + b"}" for piece in pieces[1:])]


OFFER_JSON = RowEncoder(_OFFER_KEYS[:-1], lambda rows: write_offers(rows, _OFFER_KEYS[:-1]))
"""How `/offers` writes a current offer (without `stale`: the server adds it), once per
snapshot."""


def _part(
    server: OfferServer, query: OfferQuery, now: datetime, freshness: list[ProviderFreshness]
) -> _OfferPart:
    """The page's offers as JSON, and how many."""
    answer = server.encoded(query, freshness, OFFER_JSON)
    if answer is None:  # region: asked of the warehouse
        return _offers_part(server.answer(query, now, freshness))
    return answer.array(), answer.count


def _offers_part(answer: OffersAnswer) -> _OfferPart:
    """The answer's offers as JSON, and how many."""
    rows = answer.offers
    return b"[" + b",".join(write_offers(rows)) + b"]", len(rows)


async def _stream(
    server: OfferServer,
    clock: Callable[[], datetime],
    freshness: list[ProviderFreshness],
    query: OffersParams,
    offload: Offload,
) -> StreamingResponse:
    """Every matching offer (or `limit`), one JSON object per line, as it is made."""
    answer = await offload(server.encoded, query, freshness, OFFER_JSON, query.max_age, now=clock())
    if answer is not None:
        lines: Iterator[bytes] = (b"\n".join(piece) + b"\n" for piece in answer.pieces())
    else:
        rows = (await offload(server.answer, query, clock(), freshness, query.max_age)).offers
        lines = (
            b"\n".join(write_offers(rows[i : i + _CHUNK_ROWS])) + b"\n"
            for i in range(0, len(rows), _CHUNK_ROWS)
        )
    return StreamingResponse(lines, media_type=NDJSON)


_PROVIDERS_KEPT = 64
_providers_made: OrderedDict[tuple[int, ...], tuple[tuple[ProviderFreshness, ...], bytes]] = (
    OrderedDict()
)


def _providers_json(providers: Sequence[ProviderFreshness]) -> bytes:
    """The freshness list as JSON, made once per list: a burst's pages report the same few
    (the server makes them once a second). Kept by the objects' identity, with the objects
    (so no other object takes an identity while it is kept)."""
    key = tuple(map(id, providers))
    made = _providers_made.get(key)
    if made is None:
        json = _PROVIDERS.dump_json(_PROVIDERS.validate_python(providers, from_attributes=True))
        made = _providers_made[key] = (tuple(providers), json)
        if len(_providers_made) > _PROVIDERS_KEPT:
            _providers_made.popitem(last=False)
    return made[1]


_PAGE_HEAD = b'{"offers":'


def _page_tail(count: int, providers: list[ProviderFreshness]) -> bytes:
    return b',"count":%d,"providers":%s}' % (count, _providers_json(providers))


def _page(offers_json: bytes, count: int, providers: list[ProviderFreshness]) -> Response:
    """`OffersPage` as pydantic serializes it, from the offers already serialized."""
    return _JsonPage(b"".join([_PAGE_HEAD, offers_json, _page_tail(count, providers)]))


def _encoded_page(answer: EncodedAnswer) -> bytes:
    """`OffersPage` of an encoded answer, made in one join."""
    return answer.array(_PAGE_HEAD, _page_tail(answer.count, answer.providers))


class _JsonPage(Response):
    """A page made before, with the headers `Response` would write, written at once."""

    media_type = "application/json"

    def __init__(self, body: bytes) -> None:
        self.body, self.status_code, self.background = body, 200, None
        self.raw_headers = [(b"content-length", b"%d" % len(body)), _JSON_TYPE]


_JSON_TYPE = (b"content-type", b"application/json")


class _PageInPieces(Response):
    """`OffersPage` of a large answer sent a piece at a time from the event loop: each piece a
    bounded join of offers written before, other requests (`/healthz`) served between them."""

    media_type = "application/json"

    def __init__(self, answer: EncodedAnswer) -> None:
        self.answer, self.status_code, self.background = answer, 200, None
        self.tail = _page_tail(answer.count, answer.providers)
        size = len(_PAGE_HEAD) + answer.array_size() + len(self.tail)
        self.init_headers({"content-length": str(size)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": _PAGE_HEAD, "more_body": True})
        for piece in self.answer.array_pieces(PIECE_ROWS):
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            await asyncio.sleep(0)  # let the loop serve others between pieces
        await send({"type": "http.response.body", "body": self.tail, "more_body": False})
