"""The locations gpuprices knows, per provider, and those seen in the current offers."""

from __future__ import annotations

from typing import Any

from pipeline.location import get_locator
from warehouse import Warehouse
from warehouse import queries as q

__all__ = ["known_regions"]


def known_regions(warehouse: Warehouse) -> list[dict[str, Any]]:
    """Mapped locations (with their source) plus every region in the current snapshots."""
    locator = get_locator()
    with warehouse.cursor() as cur:
        seen = {(r["provider"], r["region"]): r for r in q.current_regions(cur)}
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    for place in locator.places:
        key = (place["provider"], place["region"])
        location = locator.locate(*key)
        rows[key] = {
            "provider": key[0],
            "region": key[1],
            "country": location.country,
            "continent": location.continent,
            "eea": location.eea,
            "eu": location.eu,
            "source": location.source,
            "offers": 0,
        }
    for key, row in seen.items():
        location = locator.locate(key[0], key[1])
        rows[key] = {
            **rows.get(key, {}),
            "provider": key[0],
            "region": key[1],
            "country": row["country"],
            "continent": row["continent"],
            "eea": row["eea"],
            "eu": row["eu"],
            "source": location.source,
            "offers": row["offers"],
        }
    return sorted(rows.values(), key=lambda r: (r["provider"], r["region"] or ""))
