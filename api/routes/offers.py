from __future__ import annotations

from fastapi import APIRouter

from api import parameters as p
from api.deps import WarehouseDep
from api.schemas import OfferOut, OffersPage
from pipeline.offers import OfferQuery, current_offers

router = APIRouter(prefix="/offers", tags=["offers"])


def split_providers(values: list[str] | None) -> tuple[str, ...]:
    return tuple(n.strip() for v in values or () for n in v.split(",") if n.strip())


@router.get("", response_model=OffersPage, summary="What is on offer now")
def list_offers(
    warehouse: WarehouseDep,
    gpu: p.GpuParam = None,
    provider: p.ProviderParam = None,
    pricing: p.PricingParam = None,
    region: p.RegionParam = None,
    form_factor: p.FormFactorParam = None,
    max_price_per_gpu: p.MaxPricePerGpu = None,
    include_unavailable: p.IncludeUnavailable = False,
    sort: p.SortParam = "price_per_gpu_hour",
    limit: p.Limit = None,
) -> OffersPage:
    """Offers of each provider's latest successful snapshot, cheapest per GPU-hour first."""
    query = OfferQuery(
        gpu=gpu,
        providers=split_providers(provider),
        pricing=pricing,
        region=region,
        form_factor=form_factor,
        max_price_per_gpu_hour=max_price_per_gpu,
        include_unavailable=include_unavailable,
        sort=sort,
        limit=limit,
    )
    offers = [OfferOut.model_validate(row) for row in current_offers(warehouse, query)]
    return OffersPage(offers=offers, count=len(offers))
