"""Leaf helpers every part of the pipeline shares: the clock and the provider registry.

Imports nothing of the pipeline but its errors, so any module may import it without a cycle.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from pipeline.errors import UnknownProviderError
from scrapers import PROVIDERS, ProviderModule
from scrapers.base import in_price_index, is_rate_source, listed_only, regions

__all__ = ["ProviderFacts", "provider_facts", "provider_module", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def provider_module(name: str) -> ProviderModule:
    """The collector called `name`; an unknown name raises, listing the known ones."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UnknownProviderError(name, sorted(PROVIDERS)) from None


@dataclass(frozen=True, slots=True)
class ProviderFacts:
    """What a registered module declares about its source (`gpuprices providers`)."""

    name: str
    kind: Literal["offers", "rates"]
    endpoint: str
    key_variable: str | None
    key_required: bool
    interval: timedelta
    """The default collection interval (the `intervals.<name>` setting overrides it)."""
    currency: str
    regions_placed: int
    """Rows of its `data/<name>_regions.csv`: region names mapped to a country or continent."""
    listed_only: bool
    in_price_index: bool
    """False for a rate source: it has no offers to index."""
    configured: bool = True
    """False when its key is required and not set: its runs are *not configured*, never degraded
    (whether the variable is set, never its value)."""


def provider_facts(env: Mapping[str, str] | None = None) -> list[ProviderFacts]:
    """Every registered provider (and rate source), in registry order; `configured` read from
    `env` (default: the process environment)."""
    environment = os.environ if env is None else env
    return [_facts(module, environment) for module in PROVIDERS.values()]


def _facts(module: ProviderModule, env: Mapping[str, str]) -> ProviderFacts:
    rates = is_rate_source(module)
    key_set = bool(module.ENV_KEY and env.get(module.ENV_KEY, "").strip())
    return ProviderFacts(
        name=module.NAME,
        kind="rates" if rates else "offers",
        endpoint=module.URL,
        key_variable=module.ENV_KEY,
        key_required=module.KEY_REQUIRED,
        interval=module.INTERVAL,
        currency=module.CURRENCY,
        regions_placed=len(regions(module)),
        listed_only=listed_only(module),
        in_price_index=not rates and in_price_index(module),
        configured=key_set or not module.KEY_REQUIRED,
    )
