from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from api import parameters as p
from api.deps import ClockDep, FreshnessDep, SettingsDep, WarehouseDep
from api.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.offers import OfferQuery, answered_from_memory
from pipeline.serving import OffersAnswer, answer_offers
from pipeline.settings import parse_duration

router = APIRouter(prefix="/offers", tags=["offers"])
_OFFERS = TypeAdapter(list[OfferOut])

MaxAge = Annotated[
    str | None, Query(description="Leave out providers whose snapshot is older, e.g. 30m, 2h")
]


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
    if as_of is not None and as_of.tzinfo is None:
        raise HTTPException(422, detail="as_of needs a timezone, e.g. 2026-03-01T14:00:00Z")
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
    max_age: MaxAge = None,
) -> Response:
    """Each provider's latest good snapshot, cheapest per GPU-hour first, with its freshness.

    A provider whose last run failed still serves its last good snapshot, marked stale.
    """
    try:
        age = parse_duration(max_age) if max_age is not None else None
    except ValueError as exc:
        raise HTTPException(422, detail=f"max_age: {exc}") from None
    if answered_from_memory(warehouse, query):  # microseconds: no thread-pool hop
        return _page(answer_offers(warehouse, settings, query, clock(), freshness, age))
    answer = await run_in_threadpool(
        answer_offers, warehouse, settings, query, clock(), freshness, age
    )
    return _page(answer)


def _page(answer: OffersAnswer) -> Response:
    offers = _OFFERS.validate_python(answer.offers)
    page = OffersPage(
        offers=offers,
        count=len(offers),
        providers=[ProviderFreshnessOut.model_validate(f) for f in answer.providers],
    )
    # Serialized once, by pydantic, instead of validated again against response_model.
    return Response(page.model_dump_json(), media_type="application/json")
