"""The locations gpuprices knows, per provider, and those seen in the current offers."""

from __future__ import annotations

from typing import Any

from pipeline.location import get_locator
from warehouse import Warehouse
from warehouse import queries as q

__all__ = ["known_regions"]

_LOCATION = ("country", "continent", "eea", "eu")


def known_regions(warehouse: Warehouse) -> list[dict[str, Any]]:
    """Mapped locations (with their source) plus every region in the current snapshots: one seen
    there keeps the location its offers were stored with, and counts them."""
    locator = get_locator()
    with warehouse.cursor() as cur:
        seen = {(r["provider"], r["region"]): r for r in q.current_regions(cur)}
    mapped = [(place["provider"], place["region"]) for place in locator.places]
    rows = []
    for provider, region in dict.fromkeys([*mapped, *seen]):
        location = locator.locate(provider, region)
        stored = seen.get((provider, region))
        rows.append(
            {
                "provider": provider,
                "region": region,
                **{k: stored[k] if stored else getattr(location, k) for k in _LOCATION},
                "source": location.source,
                "offers": stored["offers"] if stored else 0,
            }
        )
    return sorted(rows, key=lambda r: (r["provider"], r["region"] or ""))
