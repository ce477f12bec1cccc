"""Provider scrapers: one module per provider, each with an I/O-only `fetch` and a pure `parse`.

A provider is its module (and its `data/<NAME>_regions.csv`); registering it is one line of
`MODULES` below. Settings, places, the schedule, `gpuprices providers` and the
README's provider table all read the modules."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from typing import cast

from scrapers.base import (
    USER_AGENT,
    Credentials,
    ProviderModule,
    RetryTransport,
    build_client,
    credentials_from_env,
)
from scrapers.batch import OfferBatch
from scrapers.errors import (
    MissingCredentialsError,
    ProviderError,
    ProviderHTTPError,
    ProviderPayloadError,
)
from scrapers.models import FormFactor, Offer, ParseResult, Pricing, Reject

__all__ = [
    "MODULES",
    "PROVIDERS",
    "USER_AGENT",
    "Credentials",
    "FormFactor",
    "MissingCredentialsError",
    "Offer",
    "OfferBatch",
    "ParseResult",
    "Pricing",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderModule",
    "ProviderPayloadError",
    "Reject",
    "RetryTransport",
    "build_client",
    "credentials_from_env",
]

MODULES: tuple[ModuleType, ...] = tuple(
    import_module(f"scrapers.{module}")
    for module in (
        "ecb",
        "vastai",
        "runpod",
        "lambdalabs",
        "coreweave",
        "scaleway",
        "ovhcloud",
        "verda",
        "hetzner",
        "aws",
        "azure",
        "gcp",
        "oci",
        "digitalocean",
        "nebius",
        "crusoe",
        "hotaisle",
        "hyperstack",
        "hyperbolic",
        "lium",
        "cloudrift",
        "vultr",
        "daytona",
        "voltagepark",
        "shadeform",
        "primeintellect",
    )
)
"""The registry: one line per provider module (by file name), in collection order; the rate
source first, since EUR prices convert with its rates."""

PROVIDERS: Mapping[str, ProviderModule] = {
    module.NAME: cast(ProviderModule, module) for module in MODULES
}
"""Every collected source: the providers of offers and the rate source `ecb`
(`scrapers.base.is_rate_source`), which stores exchange rates and yields no offers."""
