from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import Field, TypeAdapter
from starlette.concurrency import run_in_threadpool

from api.rest.deps import ClockDep, FreshnessDep, OfferServerDep
from api.rest.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.market.freshness import ProviderFreshness
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OffersAnswer
from pipeline.settings import parse_duration

router = APIRouter(prefix="/offers", tags=["offers"])
_OFFERS = TypeAdapter(list[OfferOut])
_PROVIDERS = TypeAdapter(list[ProviderFreshnessOut])

class OffersParams(OfferQuery):
    """The query of `GET /offers`: which offers, their order and number, and freshness."""

    max_age: str | None = Field(
        None,
        max_length=40,
        description="Leave out providers whose snapshot is older, e.g. 30m, 2h",
    )


OffersParamsDep = Annotated[OffersParams, Query()]
OfferQueryDep = Annotated[OfferQuery, Query()]
"""The same filters without `max_age`, for the exports."""


@router.get("", response_model=OffersPage, summary="What is on offer now (or as of a time)")
async def list_offers(
    server: OfferServerDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    query: OffersParamsDep,
) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale.
    """
    try:
        age = parse_duration(query.max_age) if query.max_age is not None else None
    except ValueError as exc:
        raise HTTPException(422, detail=f"max_age: {exc}") from None
    if age is not None or query.as_of is not None:  # answers that depend on the time
        answer = await run_in_threadpool(server.answer, query, clock(), freshness, age)
        offers_json, count, _drawn = _offers_part(answer, query)
        return _page(offers_json, count, answer.providers)
    # The offers part depends only on the snapshots in force, the query and which providers are
    # stale: serialised once per (query, stale) for as long as the snapshots last. Only a page
    # already made is answered on the event loop; making one (a selection over up to 100,000
    # offers and its JSON) runs in the thread pool.
    key = (query, frozenset(f.provider for f in freshness if f.stale))
    part = server.peek(key)
    if part is None:
        answer = server.answer
        part = await run_in_threadpool(
            server.derived, key, lambda: _offers_part(answer(query, clock(), freshness), query)
        )
    offers_json, count, drawn = part
    providers = [f for f in freshness if f.provider in drawn or not query.providers]
    return _page(offers_json, count, providers)


_OfferPart = tuple[bytes, int, frozenset[str]]


def _offers_part(answer: OffersAnswer, query: OfferQuery) -> _OfferPart:
    """The answer's offers as JSON, how many, and the providers the page reports on."""
    offers = _OFFERS.validate_python(answer.offers)
    drawn = frozenset({row["provider"] for row in answer.offers} | set(query.providers))
    return _OFFERS.dump_json(offers), len(offers), drawn


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
