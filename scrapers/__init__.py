"""Provider scrapers: one module per provider, each with an I/O-only `fetch` and a pure `parse`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from scrapers import (
    coreweave,
    ecb,
    gcp,
    hetzner,
    lambdalabs,
    oci,
    ovhcloud,
    runpod,
    scaleway,
    vastai,
    verda,
)
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

PROVIDERS: Mapping[str, ProviderModule] = {
    module.NAME: cast(ProviderModule, module)
    for module in (
        ecb,
        vastai,
        runpod,
        lambdalabs,
        coreweave,
        scaleway,
        ovhcloud,
        verda,
        hetzner,
        gcp,
        oci,
    )
}
"""Every collected source: the providers of offers and the rate source `ecb`
(`scrapers.base.is_rate_source`), which stores exchange rates and yields no offers."""
