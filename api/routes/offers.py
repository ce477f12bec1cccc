from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from api import parameters as p
from api.deps import FreshnessDep, WarehouseDep
from api.schemas import OfferOut, OffersPage, ProviderFreshnessOut
from pipeline.freshness import within_max_age
from pipeline.offers import OfferQuery, current_offers
from pipeline.settings import parse_duration

router = APIRouter(prefix="/offers", tags=["offers"])


def split_providers(values: list[str] | None) -> tuple[str, ...]:
    return tuple(n.strip() for v in values or () for n in v.split(",") if n.strip())


@router.get("", response_model=OffersPage, summary="What is on offer now")
def list_offers(
    warehouse: WarehouseDep,
    freshness: FreshnessDep,
    gpu: p.GpuParam = None,
    provider: p.ProviderParam = None,
    pricing: p.PricingParam = None,
    region: p.RegionParam = None,
    form_factor: p.FormFactorParam = None,
    max_price_per_gpu: p.MaxPricePerGpu = None,
    include_unavailable: p.IncludeUnavailable = False,
    max_age: Annotated[
        str | None,
        Query(description="Leave out providers whose snapshot is older, e.g. 30m, 2h, 1d"),
    ] = None,
    sort: p.SortParam = "price_per_gpu_hour",
    limit: p.Limit = None,
) -> OffersPage:
    """Offers of each provider's latest successful snapshot, cheapest per GPU-hour first.

    `providers` says, per provider drawn on, when its snapshot was observed and whether it is
    stale; a provider whose last run failed still serves its last good snapshot, marked stale.
    """
    providers = split_providers(provider)
    if max_age is not None:
        try:
            fresh = within_max_age(freshness, parse_duration(max_age))
        except ValueError as exc:
            raise HTTPException(422, detail=f"max_age: {exc}") from None
        wanted = set(providers) if providers else {f.provider for f in freshness}
        providers = tuple(sorted(wanted & fresh))
        freshness = [f for f in freshness if f.provider in providers]
        if not providers:
            return OffersPage(offers=[], count=0, providers=[])
    query = OfferQuery(
        gpu=gpu,
        providers=providers,
        pricing=pricing,
        region=region,
        form_factor=form_factor,
        max_price_per_gpu_hour=max_price_per_gpu,
        include_unavailable=include_unavailable,
        sort=sort,
        limit=limit,
    )
    stale = {f.provider for f in freshness if f.stale}
    offers = [
        OfferOut.model_validate({**row, "stale": row["provider"] in stale})
        for row in current_offers(warehouse, query)
    ]
    drawn = {o.provider for o in offers} | set(providers)
    return OffersPage(
        offers=offers,
        count=len(offers),
        providers=[
            ProviderFreshnessOut.model_validate(f)
            for f in freshness
            if f.provider in drawn or not providers
        ],
    )
