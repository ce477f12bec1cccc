"""Provider scrapers: one module per provider, each with an I/O-only `fetch` and a pure `parse`.

A provider is its module (and its `data/<NAME>_regions.csv`); registering it is one line of
`MODULES` below, which reads each module once into a typed `Provider` (or, for the ECB, a
`RateSource`; scrapers/registry.py checks the contract at import). Settings, places, the
schedule, `gpuprices providers`, the README's provider table and the compose file's collectors
all read `PROVIDERS` and `RATE_SOURCES`."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from scrapers.base import USER_AGENT, Credentials, RetryTransport, build_client
from scrapers.batch import OfferBatch
from scrapers.errors import (
    MissingCredentialsError,
    ProviderError,
    ProviderHTTPError,
    ProviderPayloadError,
)
from scrapers.models import FormFactor, Offer, ParseResult, Pricing, Reject
from scrapers.registry import (
    ContractError,
    Provider,
    RateSource,
    Source,
    credentials_from_env,
    read_registry,
)

__all__ = [
    "MODULES",
    "PROVIDERS",
    "RATE_SOURCES",
    "USER_AGENT",
    "ContractError",
    "Credentials",
    "FormFactor",
    "MissingCredentialsError",
    "Offer",
    "OfferBatch",
    "ParseResult",
    "Pricing",
    "RateSource",
    "ProviderError",
    "ProviderHTTPError",
    "Provider",
    "ProviderPayloadError",
    "Reject",
    "RetryTransport",
    "Source",
    "build_client",
    "credentials_from_env",
    "sources",
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
        "jarvislabs",
        "seeweb",
        "fluidstack",
        "latitude",
        "mithril",
        "shadeform",
        "primeintellect",
    )
)
"""The registry: one line per provider module (by file name), in collection order; the rate
source first, since EUR prices convert with its rates."""

PROVIDERS, RATE_SOURCES = read_registry(MODULES)
"""The providers of offers, and apart the rate sources (the ECB: collected like a provider, it
stores exchange rates, no offers), each by name in registry order."""


def sources() -> dict[str, Provider | RateSource]:
    """Every collected source by name, in collection order: the rate sources first (EUR prices
    convert with their rates), then the providers."""
    return {**RATE_SOURCES, **PROVIDERS}
