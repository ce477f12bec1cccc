from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Response
from pydantic import TypeAdapter

from api import parameters as p
from api.deps import ClockDep, FreshnessDep, OffloadDep, SettingsDep, WarehouseDep
from api.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.freshness import ProviderFreshness
from pipeline.offers import OfferQuery, answered_from_memory
from pipeline.serving import OffersAnswer, answer_offers
from pipeline.settings import Settings
from warehouse import Warehouse

router = APIRouter(prefix="/offers", tags=["offers"])
_OFFERS = TypeAdapter(list[OfferOut])
_PROVIDERS = TypeAdapter(list[ProviderFreshnessOut])

def split_providers(values: list[str] | None) -> tuple[str, ...]:
    return tuple(n.strip() for v in values or () for n in v.split(",") if n.strip())


async def offer_query(
    gpu: p.GpuParam = None,
    provider: p.ProviderParam = None,
    pricing: p.PricingParam = None,
    region: p.RegionParam = None,
    form_factor: p.FormFactorParam = None,
    max_price_per_gpu: p.MaxPricePerGpu = None,
    include_unavailable: p.IncludeUnavailable = False,
    sort: p.SortParam = "price_per_gpu_hour",
    limit: p.Limit = None,
    as_of: p.AsOfParam = None,
    country: p.CountryParam = None,
    continent: p.ContinentParam = None,
    jurisdiction: p.JurisdictionParam = None,
) -> OfferQuery:
    """The `/offers` filters, shared with the exports."""
    return OfferQuery(
        gpu=gpu,
        providers=split_providers(provider),
        pricing=pricing,
        region=region,
        form_factor=form_factor,
        max_price_per_gpu_hour=max_price_per_gpu,
        include_unavailable=include_unavailable,
        sort=sort,
        limit=limit,
        as_of=as_of,
        countries=tuple(country or ()),
        continent=continent,
        jurisdiction=jurisdiction,
    )


OfferQueryDep = Annotated[OfferQuery, Depends(offer_query)]


@router.get("", response_model=OffersPage, summary="What is on offer now (or as of a time)")
async def list_offers(
    warehouse: WarehouseDep,
    settings: SettingsDep,
    clock: ClockDep,
    freshness: FreshnessDep,
    query: OfferQueryDep,
    offload: OffloadDep,
    max_age: p.MaxAgeParam = None,
) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale. A page
    holds at most `limit` offers, 10,000 at most (and by default).
    """
    query = dataclasses.replace(query, limit=query.limit or p.MAX_OFFERS_PAGE)
    version = answered_from_memory(warehouse, query)
    # A database read or a big page is computed off the event loop; a small page from memory
    # (a few ms) right here, which is faster than the hop to a worker.
    run = _inline if version is not None and query.limit <= _INLINE_ROWS else offload
    if version is None or max_age is not None:
        answer = await run(answer_offers, warehouse, settings, query, clock(), freshness, max_age)
        offers_json, count, _drawn = await run(_offers_part, answer, query)
        return _page(offers_json, count, answer.providers)
    # From memory. The offers part depends only on the snapshots, the query and which providers
    # are stale: serialized once per (that, query), as long as the snapshots last; a page
    # already serialized is only joined here.
    stale = frozenset(f.provider for f in freshness if f.stale)
    key = (id(warehouse), version, query, stale)
    part = _offers_parts.get(key)
    if part is None:
        part = await run(_answer_part, warehouse, settings, query, clock(), freshness)
        _remember(key, part)
    offers_json, count, drawn = part
    providers = [f for f in freshness if f.provider in drawn or not query.providers]
    return _page(offers_json, count, providers)


_INLINE_ROWS = 200
"""Pages of at most this many offers from memory are built on the event loop (a few ms)."""
T = TypeVar("T")


async def _inline(func: Callable[..., T], *args: Any) -> T:
    return func(*args)


_OfferPart = tuple[bytes, int, frozenset[str]]
_offers_parts: OrderedDict[Hashable, _OfferPart] = OrderedDict()
_CHUNK_ROWS = 128
"""Offers validated and serialized per call (a few ms of GIL each)."""
_PARTS_KEPT = 512
"""Serialized offer lists kept (least recently used out); each is a page of a query's offers."""


def _remember(key: Hashable, part: _OfferPart) -> None:
    _offers_parts[key] = part
    while len(_offers_parts) > _PARTS_KEPT:
        _offers_parts.popitem(last=False)


def _answer_part(
    warehouse: Warehouse,
    settings: Settings,
    query: OfferQuery,
    now: datetime,
    freshness: list[ProviderFreshness],
) -> _OfferPart:
    return _offers_part(answer_offers(warehouse, settings, query, now, freshness), query)


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
