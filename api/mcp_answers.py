"""What an MCP tool hands an agent: the API's answer cut to the fields a buyer reads, with
numbers rounded to what they mean, so an answer fits a model's context.

One helper for every tool: `compact(tool, answer)` keeps each tool's buyer fields (an offer's
provider, GPU, form factor, count, prices, pricing, place, availability, freshness; a quote's
hours and cost; a history's newest points) and `rounded` rounds every float the same way:
percentages to 0.1, everything else to the cent or 4 significant digits, whichever says more
(3.1900000000000004 is 3.19, 0.10533333 is 0.1053, 1234.5678 is 1234.57). `full: true` on a tool
skips both and returns the API's answer as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["HISTORY_POINTS", "compact", "rounded"]

OFFER_FIELDS = (
    "provider",
    "offer_id",
    "gpu",
    "form_factor",
    "gpu_count",
    "vram_gb",
    "pricing",
    "price_per_gpu_hour",
    "price_per_hour",
    "region",
    "country",
    "eea",
    "available",
    "observed_at",
    "stale",
)
PROVIDER_FIELDS = ("provider", "observed_at", "stale", "last_error")
QUOTE_FIELDS = (
    "offer",
    "gpus",
    "layout",
    "hours",
    "hours_range",
    "cost_usd",
    "cost_range_usd",
    "memory_per_gpu_gib",
    "headroom",
    "interruption_risk",
    "notes",
    "history",
)
MODEL_FIELDS = (
    "name",
    "hub_id",
    "kind",
    "total_params_b",
    "active_params_b",
    "context_length",
)
POINT_FIELDS = ("t", "min", "p25", "median", "max", "offers", "available")
HISTORY_POINTS = 30
"""A compact history keeps the newest this many points of each series (30 days at 1d)."""
SIGNIFICANT_DIGITS = 4
CENTS = 2
PERCENT_DECIMALS = 1


def rounded(value: Any, key: str = "") -> Any:
    """`value` with every float in it rounded to its meaning: a percentage (a key naming
    percent) to 0.1, any other float to the cent or 4 significant digits, whichever is finer."""
    if isinstance(value, Mapping):
        return {name: rounded(item, str(name)) for name, item in value.items()}
    if isinstance(value, list):
        return [rounded(item, key) for item in value]
    if not isinstance(value, float) or not math.isfinite(value) or value == 0:
        return value
    if "percent" in key:
        return round(value, PERCENT_DECIMALS)
    magnitude = math.floor(math.log10(abs(value)))
    return round(value, max(CENTS, SIGNIFICANT_DIGITS - 1 - magnitude))


def _pick(record: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    return {name: record[name] for name in fields if name in record}


def _offers(answer: dict[str, Any]) -> dict[str, Any]:
    offers = [_pick(offer, OFFER_FIELDS) for offer in answer.get("offers", [])]
    listed = {offer.get("provider") for offer in offers}
    providers = [
        _pick(provider, PROVIDER_FIELDS)
        for provider in answer.get("providers", [])
        if provider.get("provider") in listed
    ]
    return {**answer, "offers": offers, "providers": providers}


def _quote(answer: dict[str, Any]) -> dict[str, Any]:
    quotes = []
    for quote in answer.get("quotes", []):
        kept = _pick(quote, QUOTE_FIELDS)
        if isinstance(kept.get("offer"), Mapping):
            kept["offer"] = _pick(kept["offer"], OFFER_FIELDS)
        quotes.append(kept)
    workload = {k: v for k, v in answer.get("workload", {}).items() if k != "architecture"}
    memory = {k: v for k, v in answer.get("memory", {}).items() if k != "breakdown"}
    return {**answer, "workload": workload, "memory": memory, "quotes": quotes}


def _models(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "models": [_pick(m, MODEL_FIELDS) for m in answer.get("models", [])]}


def _history(answer: dict[str, Any]) -> dict[str, Any]:
    series = []
    for one in answer.get("series", []):
        points = one.get("points", [])
        kept = [_pick(point, POINT_FIELDS) for point in points[-HISTORY_POINTS:]]
        series.append({**one, "points": kept, "points_left_off": len(points) - len(kept)})
    return {**answer, "series": series}


COMPACTORS: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "offers": _offers,
    "quote": _quote,
    "models": _models,
    "history": _history,
}
"""Per tool, the fields it keeps; a tool not named here (market) keeps all, rounded."""


def compact(tool: str, answer: Any) -> Any:
    """The compact form of `tool`'s API answer: its buyer fields, rounded."""
    if isinstance(answer, dict) and tool in COMPACTORS:
        answer = COMPACTORS[tool](answer)
    return rounded(answer)
