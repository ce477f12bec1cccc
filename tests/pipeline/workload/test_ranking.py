"""A spot offer dearer than its machine's on-demand offer is kept, but never quoted over it."""

from __future__ import annotations

from pipeline.catalog import get_catalog
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
