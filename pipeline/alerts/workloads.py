"""Workload-cost alerts: a saved workload (the body `POST /quotes` takes) quoted on current offers.

Filters given with the rule (its scope: gpu, providers, pricing, place) win over those saved
with the workload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from pipeline.alerts.condition import Condition
from pipeline.alerts.errors import InvalidAlertError
from pipeline.catalog import Catalog
from pipeline.market.offers import OfferQuery
from pipeline.market.scope import OfferScope
from pipeline.workload.model import Workload
from pipeline.workload.quotes import QUOTE_SCOPE, QuoteRequest, quote_offers
from pipeline.workload.ranking import Quote
from warehouse import Warehouse

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
        "experts_bits",
        "layout",
    }
)
_SCOPE_KEYS = frozenset(OfferScope.model_fields[name].alias or name for name in QUOTE_SCOPE)
"""The quote's offer filters, by the names the body of `POST /quotes` gives them."""
_QUOTE_KEYS = frozenset({"max_hours", "include_spot"})
_IGNORED_KEYS = frozenset({"top", "max_cost_usd"})
"""Quote options that an alert sets itself (the best quote; the threshold)."""


def quote_request(condition: Condition) -> QuoteRequest:
    """The quote an alert's `condition` asks for (a `Condition` of kind workload)."""
    saved: Mapping[str, Any] = condition.workload or {}
    unknown = sorted(set(saved) - _WORKLOAD_KEYS - _SCOPE_KEYS - _QUOTE_KEYS - _IGNORED_KEYS)
    if unknown:
        raise InvalidAlertError("workload", f"unknown fields {', '.join(unknown)}")
    if "method" not in saved:
        raise InvalidAlertError("workload", "method is required (full, lora or qlora)")
    options = {k: v for k, v in saved.items() if k in _WORKLOAD_KEYS}
    workload = Workload.build(**options)
    try:  # the saved body's filters, by their API names; the alert's own win
        saved_scope = OfferScope.model_validate(
            {k: v for k, v in saved.items() if k in _SCOPE_KEYS and v is not None}
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InvalidAlertError("workload", f"{where}: {error['msg']}") from None
    given = {name: getattr(condition.scope, name) for name in condition.scope.given()}
    return QuoteRequest(
        workload=workload,
        scope=saved_scope.model_copy(update=given),
        max_hours=saved.get("max_hours"),
        include_spot=bool(saved.get("include_spot", False)),
        top=1,
    )


def best_quote(
    warehouse: Warehouse,
    condition: Condition,
    catalog: Catalog,
    offers: Callable[[OfferQuery], list[dict[str, Any]]] | None = None,
) -> Quote | None:
    """The cheapest feasible quote now (over `offers` when given), or None when no current
    offer can run the job."""
    request = quote_request(condition)
    ranking = quote_offers(warehouse, request, catalog, with_history=False, offers=offers)
    return ranking.ranking.quotes[0] if ranking.ranking.quotes else None
