"""Workload-cost alerts: a saved workload (the body `POST /quotes` takes) quoted on current offers.

Filters given with the rule (providers, pricing, region, gpu) win over those in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pipeline.alerts.errors import InvalidAlertError
from pipeline.catalog import Catalog
from pipeline.quotes import QuoteRequest, quote_offers
from pipeline.ranking import Quote
from pipeline.workload import Workload
from scrapers.models import Pricing
from warehouse import Warehouse

if TYPE_CHECKING:
    from pipeline.alerts.rules import Condition

__all__ = ["best_quote", "quote_request"]

_WORKLOAD_KEYS = frozenset(
    {
        "model",
        "params_b",
        "config",
        "method",
        "tokens",
        "precision",
        "seq_len",
        "micro_batch",
        "grad_ckpt",
        "optimizer",
        "lora_rank",
        "profile",
        "packing",
        "flash_attention",
        "lora_targets",
    }
)
_FILTER_KEYS = frozenset(
    {
        "provider",
        "pricing",
        "region",
        "country",
        "continent",
        "jurisdiction",
        "gpu",
        "max_hours",
        "include_spot",
    }
)
_IGNORED_KEYS = frozenset({"top", "max_cost_usd"})
"""Quote options that an alert sets itself (the best quote; the threshold)."""


def _providers(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else list(value or ())
    return tuple(n.strip() for item in items for n in str(item).split(",") if n.strip())


def quote_request(condition: Condition) -> QuoteRequest:
    """The quote an alert's `condition` asks for (a `Condition` of kind workload)."""
    saved: Mapping[str, Any] = condition.workload or {}
    unknown = sorted(set(saved) - _WORKLOAD_KEYS - _FILTER_KEYS - _IGNORED_KEYS)
    if unknown:
        raise InvalidAlertError("workload", f"unknown fields {', '.join(unknown)}")
    if "method" not in saved:
        raise InvalidAlertError("workload", "method is required (full, lora or qlora)")
    options = {k: v for k, v in saved.items() if k in _WORKLOAD_KEYS}
    workload = Workload.build(**options)
    try:
        saved_pricing = Pricing(saved["pricing"]) if saved.get("pricing") else None
    except ValueError:
        raise InvalidAlertError("workload", "pricing must be on_demand or spot") from None
    pricing = condition.pricing or saved_pricing
    return QuoteRequest(
        workload=workload,
        providers=condition.providers or _providers(saved.get("provider")),
        pricing=pricing,
        region=condition.region or saved.get("region"),
        countries=condition.countries or tuple(_listed(saved.get("country"))),
        continent=condition.continent or saved.get("continent"),
        jurisdiction=condition.jurisdiction or saved.get("jurisdiction"),
        gpu=condition.gpu or saved.get("gpu"),
        max_hours=saved.get("max_hours"),
        include_spot=bool(saved.get("include_spot", False)),
        top=1,
    )


def _listed(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list) else []


def best_quote(warehouse: Warehouse, condition: Condition, catalog: Catalog) -> Quote | None:
    """The cheapest feasible quote now, or None when no current offer can run the job."""
    ranking = quote_offers(warehouse, quote_request(condition), catalog)
    return ranking.ranking.quotes[0] if ranking.ranking.quotes else None
