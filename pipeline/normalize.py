"""From a parser's offers to the column batch the warehouse stores.

Provider-agnostic: resolve each GPU name through the catalog, drop duplicate keys and offers that
break a cross-offer invariant (spot above on-demand for the same offer) into the quarantine.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import pyarrow as pa

from pipeline.catalog import Catalog
from pipeline.location import Locator, get_locator
from scrapers.models import Offer, ParseResult, Pricing, Reject
from warehouse import OFFER_SCHEMA, REJECT_SCHEMA

__all__ = ["normalize", "offers_to_table", "rejects_to_table"]


def _resolved(offer: Offer, catalog: Catalog, locator: Locator) -> Offer:
    place = locator.locate(offer.provider, offer.region)
    update: dict[str, object] = {
        "country": place.country,
        "continent": place.continent,
        "eea": place.eea,
        "eu": place.eu,
    }
    resolution = catalog.resolve(offer.gpu_raw, offer.vram_gb)
    if resolution.gpu is not None:
        update |= {
            "gpu": resolution.gpu,
            "form_factor": resolution.form_factor or offer.form_factor,
            "vram_gb": resolution.vram_gb or offer.vram_gb,
        }
    return offer.model_copy(update=update)


def _reject(offer: Offer, reason: str) -> Reject:
    return Reject(
        provider=offer.provider,
        record_id=offer.offer_id,
        reason=reason,
        raw=offer.model_dump_json(),
    )


def normalize(result: ParseResult, catalog: Catalog, locator: Locator | None = None) -> ParseResult:
    """Resolve GPUs and places; keep the first offer per (offer_id, pricing), quarantine others."""
    locator = locator or get_locator()
    rejects = list(result.rejects)
    by_key: dict[tuple[str, Pricing], Offer] = {}
    for offer in result.offers:
        key = (offer.offer_id, offer.pricing)
        if key in by_key:
            rejects.append(
                _reject(offer, f"duplicate offer_id {offer.offer_id!r} ({offer.pricing})")
            )
            continue
        by_key[key] = _resolved(offer, catalog, locator)

    offers: list[Offer] = []
    for (offer_id, pricing), offer in by_key.items():
        on_demand = by_key.get((offer_id, Pricing.ON_DEMAND))
        if (
            pricing is Pricing.SPOT
            and on_demand is not None
            and offer.price_per_hour > on_demand.price_per_hour
        ):
            rejects.append(
                _reject(
                    offer,
                    f"spot price {offer.price_per_hour} above on-demand "
                    f"{on_demand.price_per_hour} for the same offer",
                )
            )
            continue
        offers.append(offer)
    return ParseResult(offers=offers, rejects=rejects)


def offers_to_table(offers: Sequence[Offer]) -> pa.Table:
    """Column-wise Arrow batch in the warehouse's offer schema."""
    columns = {name: [getattr(offer, name) for offer in offers] for name in OFFER_SCHEMA.names}
    for name in ("pricing", "form_factor"):
        columns[name] = [None if v is None else str(v) for v in columns[name]]
    return pa.table(columns, schema=OFFER_SCHEMA)


def rejects_to_table(rejects: Sequence[Reject], observed_at: object) -> pa.Table:
    return pa.table(
        {
            "provider": [r.provider for r in rejects],
            "record_id": [r.record_id for r in rejects],
            "reason": [r.reason for r in rejects],
            "raw": [
                r.raw if isinstance(r.raw, str) else orjson.dumps(r.raw).decode() for r in rejects
            ],
            "observed_at": [observed_at] * len(rejects),
        },
        schema=REJECT_SCHEMA,
    )
