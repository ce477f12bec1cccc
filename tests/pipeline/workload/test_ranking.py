"""A spot offer dearer than its machine's on-demand offer is kept, but never quoted over it; a
resale as dear as its seller's own offer is not quoted twice."""

from __future__ import annotations

from pipeline.catalog import get_catalog
from pipeline.market.sellers import SOLD_CHEAPER_DIRECTLY, resold_dearer
from pipeline.workload.ranking import SPOT_NOT_CHEAPER, rank_offers
from tests.pipeline.workload.test_model import QLORA_70B, offer


def machine(price: float, pricing: str, offer_id: str = "vast-1") -> dict:
    return offer("H100-80GB", 8, price, pricing=pricing, offer_id=offer_id, form_factor="SXM")


def test_a_spot_offer_not_below_its_machines_on_demand_price_is_skipped_with_the_reason():
    offers = [machine(15.47, "on_demand"), machine(15.48, "spot")]
    ranking = rank_offers(QLORA_70B, offers, get_catalog(), include_spot=True)
    assert [q.offer["pricing"] for q in ranking.quotes] == ["on_demand"]
    assert [(s.reason, s.offers) for s in ranking.skipped] == [(SPOT_NOT_CHEAPER, 1)]


def test_a_dear_spot_offer_of_another_machine_is_still_quoted():
    offers = [machine(15.47, "on_demand"), machine(15.48, "spot", offer_id="vast-2")]
    ranking = rank_offers(QLORA_70B, offers, get_catalog(), include_spot=True)
    assert [q.offer["pricing"] for q in ranking.quotes] == ["on_demand", "spot"]


def sold_by(provider: str, price: float, seller: str | None = None, **extra) -> dict:
    row = machine(price, "on_demand", offer_id=f"{provider}-{seller}-{price}")
    return {**row, "provider": provider, "seller": seller, **extra}


def test_a_resale_as_dear_as_its_sellers_own_offer_is_skipped_with_the_reason():
    offers = [sold_by("lambda", 23.92), sold_by("primeintellect", 23.92, seller="lambda")]
    ranking = rank_offers(QLORA_70B, offers, get_catalog())
    assert [q.offer["provider"] for q in ranking.quotes] == ["lambda"]
    assert [(s.reason, s.offers) for s in ranking.skipped] == [(SOLD_CHEAPER_DIRECTLY, 1)]


def test_a_resale_cheaper_than_its_sellers_own_offer_is_quoted_first():
    offers = [sold_by("lambda", 23.92), sold_by("primeintellect", 19.92, seller="lambda")]
    ranking = rank_offers(QLORA_70B, offers, get_catalog())
    assert [q.offer["provider"] for q in ranking.quotes] == ["primeintellect", "lambda"]
    assert ranking.skipped == []


def test_a_resale_stays_when_its_seller_offers_another_machine_or_none_available():
    offers = [
        sold_by("lambda", 12.0, gpu_count=4),  # 4 GPUs: another machine
        sold_by("lambda", 20.0, available=False),
        sold_by("shadeform", 23.92, seller="lambda"),
        sold_by("shadeform", 23.92, seller="massedcompute"),  # not collected directly
    ]
    assert resold_dearer(offers) == set()
