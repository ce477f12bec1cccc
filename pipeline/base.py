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
from scrapers import Provider, RateSource, Source, sources
from scrapers.registry import regions

__all__ = [
    "LAKE_COLLECTORS",
    "ProviderFacts",
    "collector_shares",
    "provider_facts",
    "provider_module",
    "utc_now",
]

LAKE_COLLECTORS = 2
"""Collectors of the compose file's `lake` profile: each owns a share, standing by for the other."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def provider_module(name: str) -> Provider | RateSource:
    """The source (provider or rate source) called `name`; an unknown name raises, listing the
    known ones."""
    known = sources()
    try:
        return known[name]
    except KeyError:
        raise UnknownProviderError(name, sorted(known)) from None


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
    """Every registered source: the rate sources, then the providers, in registry order;
    `configured` read from `env` (default: the process environment)."""
    environment = os.environ if env is None else env
    return [_facts(source, environment) for source in sources().values()]


def _facts(source: Source, env: Mapping[str, str]) -> ProviderFacts:
    offers = source if isinstance(source, Provider) else None
    key_set = bool(source.env_key and env.get(source.env_key, "").strip())
    return ProviderFacts(
        name=source.name,
        kind="rates" if isinstance(source, RateSource) else "offers",
        endpoint=source.url,
        key_variable=source.env_key,
        key_required=source.key_required,
        interval=source.interval,
        currency=source.currency,
        regions_placed=len(regions(source)),
        listed_only=offers is not None and offers.listed_only,
        in_price_index=offers is not None and offers.in_price_index,
        configured=key_set or not source.key_required,
    )


def collector_shares(collectors: int = LAKE_COLLECTORS) -> list[list[str]]:
    """The registered sources split between `collectors` collectors (the compose file's lake
    collectors, generated from it): the first owns the rate sources and every provider quoting
    another currency than USD (they convert with the rates it stores), the others the rest, each
    next provider (in registry order) going to the collector owning the fewest."""
    shares: list[list[str]] = [[] for _ in range(collectors)]
    rest: list[str] = []
    for name, source in sources().items():
        converts = isinstance(source, RateSource) or source.currency != "USD"
        (shares[0] if converts else rest).append(name)
    for name in rest:
        min(shares, key=len).append(name)
    return shares
