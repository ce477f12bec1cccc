from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import Field, TypeAdapter
from starlette.concurrency import run_in_threadpool

from api.deps import ClockDep, FreshnessDep, SettingsDep, WarehouseDep
from api.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.freshness import ProviderFreshness
from pipeline.offers import OfferQuery, answered_from_memory
from pipeline.serving import OffersAnswer, answer_offers
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
    warehouse: WarehouseDep,
    settings: SettingsDep,
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
    version = answered_from_memory(warehouse, query)
    if version is None:  # a database read: in the thread pool
        answer = await run_in_threadpool(
            answer_offers, warehouse, settings, query, clock(), freshness, age
        )
        offers_json, count, _drawn = _offers_part(answer, query)
        return _page(offers_json, count, answer.providers)
    # From memory, inline. Without max_age the offers part depends only on the snapshots, the
    # query and which providers are stale: serialized once per (that, query), as long as the
    # snapshots last.
    stale = frozenset(f.provider for f in freshness if f.stale)
    key = (id(warehouse), version, query, stale)
    part = _offers_parts.get(key) if age is None else None
    if part is None:
        answer = answer_offers(warehouse, settings, query, clock(), freshness, age)
        part = _offers_part(answer, query)
        if age is not None:
            return _page(part[0], part[1], answer.providers)
        _remember(key, part)
    offers_json, count, drawn = part
    providers = [f for f in freshness if f.provider in drawn or not query.providers]
    return _page(offers_json, count, providers)


_OfferPart = tuple[bytes, int, frozenset[str]]
_offers_parts: OrderedDict[Hashable, _OfferPart] = OrderedDict()
_PARTS_KEPT = 512
"""Serialized offer lists kept (least recently used out); each is a page of a query's offers."""


def _remember(key: Hashable, part: _OfferPart) -> None:
    _offers_parts[key] = part
    while len(_offers_parts) > _PARTS_KEPT:
        _offers_parts.popitem(last=False)


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
