"""Leaf helpers every part of the pipeline shares: the clock and the provider registry.

Imports nothing of the pipeline but its errors, so any module may import it without a cycle.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.errors import UnknownProviderError
from scrapers import PROVIDERS, ProviderModule

__all__ = ["provider_module", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def provider_module(name: str) -> ProviderModule:
    """The collector called `name`; an unknown name raises, listing the known ones."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise UnknownProviderError(name, sorted(PROVIDERS)) from None
