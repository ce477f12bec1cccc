"""Offers seen twice: directly from a cloud and resold through an aggregator.

An aggregator's offer (Shadeform, Prime Intellect) names the cloud behind it in `seller`. In a
"cheapest" answer (quotes, `/offers/best`) such a resale is left out when the seller's own offer
of the same machine is in the same answer at the same or a lower price: the same GPU, form factor,
pricing and GPU count, whatever the region (the two name regions differently), available now. A
resale cheaper than every such offer stays: renting through the aggregator is then the cheaper
way. The price index has its own rule (`warehouse.summaries.COUNTED_ONCE`): a resale of a cloud
we collect directly is not counted there at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SOLD_CHEAPER_DIRECTLY", "resold_dearer"]

SOLD_CHEAPER_DIRECTLY = "resold by an aggregator; the seller's own offer is as cheap or cheaper"
"""Why a resale is left out of a cheapest answer (a skipped group's reason)."""

_MACHINE = ("gpu", "form_factor", "pricing", "gpu_count")


def _machine(offer: Mapping[str, Any], provider: Any) -> tuple[Any, ...]:
    return (provider, *(offer.get(key) for key in _MACHINE))


def resold_dearer(offers: Sequence[Mapping[str, Any]]) -> set[int]:
    """The positions of the resales in `offers` whose seller's own offer of the same machine, in
    `offers` and available, costs the same or less per GPU-hour."""
    direct: dict[tuple[Any, ...], float] = {}
    for offer in offers:
        if offer.get("seller") is None and offer.get("available", True) and offer.get("gpu"):
            key = _machine(offer, offer.get("provider"))
            price = offer["price_per_gpu_hour"]
            direct[key] = min(price, direct.get(key, price))
    if not direct:
        return set()
    return {
        i
        for i, offer in enumerate(offers)
        if offer.get("seller") is not None
        and direct.get(_machine(offer, offer["seller"]), float("inf"))
        <= offer["price_per_gpu_hour"]
    }
