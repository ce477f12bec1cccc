from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import Field, TypeAdapter

from api.rest.deps import ClockDep, FreshnessDep, OfferServerDep, OffloadDep
from api.rest.parameters import MAX_OFFERS_PAGE
from api.rest.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OffersAnswer
from pipeline.timeparse import Duration

router = APIRouter(prefix="/offers", tags=["offers"])
_OFFERS = TypeAdapter(list[OfferOut])
_PROVIDERS = TypeAdapter(list[ProviderFreshnessOut])


class OffersParams(OfferQuery):
    """The query of `GET /offers`: which offers, their order and number, and freshness."""

    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_OFFERS_PAGE,
        description=f"Most offers to return; a JSON page holds at most {MAX_OFFERS_PAGE:,} "
        "(the default); exports hold every row unless limited",
    )
    max_age: Duration | None = Field(
        None,
        description="Leave out providers whose snapshot is older: 30m, 2h, PT2H (max 10 years)",
    )


OffersParamsDep = Annotated[OffersParams, Query()]
OfferQueryDep = Annotated[OfferQuery, Query()]
"""The same filters without `max_age` and the page cap, for the exports."""

# A page already made is joined on the event loop; any other work (a selection over up to
# 100,000 offers, its JSON) runs off it, one heavy call at a time (`OffloadDep`).
_CHUNK_ROWS = 128
"""Offers validated and serialised per call (a few ms of GIL each)."""


@router.get("", response_model=OffersPage, summary="What is on offer now (or as of a time)")
async def list_offers(
    server: OfferServerDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    query: OffersParamsDep,
    offload: OffloadDep,
) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale. A page
    holds at most `limit` offers, 10,000 at most (and by default).
    """
    query = query.model_copy(update={"limit": query.limit or MAX_OFFERS_PAGE})
    if query.max_age is not None or query.as_of is not None:  # answers that depend on the time
        answer = await offload(server.answer, query, clock(), freshness, query.max_age)
        offers_json, count, _drawn = await offload(_offers_part, answer, query)
        return _page(offers_json, count, answer.providers)
    # The offers part depends only on the snapshots in force, the query and which providers are
    # stale: serialised once per (query, stale) for as long as the snapshots last.
    key = (query, frozenset(f.provider for f in freshness if f.stale))
    part = server.peek(key)
    if part is None:
        answer = server.answer
        part = await offload(
            server.derived, key, lambda: _offers_part(answer(query, clock(), freshness), query)
        )
    offers_json, count, drawn = part
    providers = [f for f in freshness if f.provider in drawn or not query.providers]
    return _page(offers_json, count, providers)


_OfferPart = tuple[bytes, int, frozenset[str]]


def _offers_part(answer: OffersAnswer, query: OfferQuery) -> _OfferPart:
    """The answer's offers as JSON, how many, and the providers the page reports on."""
    rows = answer.offers
    parts = [  # in chunks: each call holds the GIL, and a whole page's would stall the loop
        _OFFERS.dump_json(_OFFERS.validate_python(rows[i : i + _CHUNK_ROWS]))[1:-1]
        for i in range(0, len(rows), _CHUNK_ROWS)
    ]
    drawn = frozenset({row["provider"] for row in rows} | set(query.providers))
    return b"[" + b",".join(parts) + b"]", len(rows), drawn


def _page(offers_json: bytes, count: int, providers: list[ProviderFreshness]) -> Response:
    """`OffersPage` as pydantic serializes it, from the offers already serialized."""
    body = b"".join(
        [
            b'{"offers":',
            offers_json,
            b',"count":%d,"providers":' % count,
            _PROVIDERS.dump_json(_PROVIDERS.validate_python(providers, from_attributes=True)),
            b"}",
        ]
    )
    return Response(body, media_type="application/json")
