"""Query parameters shared by the routes, declared once with units and bounds."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path, Query
from pydantic import StringConstraints

from pipeline.timeparse import Duration, UtcDateTime
from scrapers.models import FormFactor, Pricing

__all__ = [
    "ContinentParam",
    "CountryParam",
    "JurisdictionParam",
    "Path",
    "AsOfParam",
    "FormFactorParam",
    "IntervalParam",
    "MAX_NAME_CHARS",
    "MAX_OFFERS_PAGE",
    "MaxAgeParam",
    "Name",
    "Names",
    "SinceParam",
    "UntilParam",
    "GpuParam",
    "IncludeUnavailable",
    "Limit",
    "MaxPricePerGpu",
    "PricingParam",
    "ProviderParam",
    "RegionParam",
    "SortParam",
]

MAX_NAME_CHARS = 200
"""Longest GPU, provider, region or place name accepted (the longest real one is ~60)."""
MAX_LISTED = 50
"""Most values of a repeatable parameter (providers, countries)."""
MAX_OFFERS_PAGE = 10_000
"""Most offers one JSON page of `/offers` holds; exports and NDJSON are not capped."""
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Names = Annotated[list[Name], Query(max_length=MAX_LISTED)]

GpuParam = Annotated[
    str | None,
    Query(
        description="Canonical id (A100-80GB), family (A100) or any provider spelling",
        min_length=1,
        max_length=MAX_NAME_CHARS,
        examples=["A100-80GB"],
    ),
]
ProviderParam = Annotated[
    list[Name] | None,
    Query(description="Provider name; repeat or comma-separate for several", max_length=MAX_LISTED),
]
PricingParam = Annotated[Pricing | None, Query(description="on_demand or spot")]
RegionParam = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="Case-insensitive part of the region text",
    ),
]
FormFactorParam = Annotated[FormFactor | None, Query(description="SXM, PCIe or NVL")]
MaxPricePerGpu = Annotated[
    float | None,
    Query(ge=0, le=1e6, allow_inf_nan=False, description="Upper bound, USD per GPU-hour"),
]
IncludeUnavailable = Annotated[
    bool, Query(description="Also list offers that are listed but not rentable now")
]
SortParam = Annotated[
    Literal["price_per_gpu_hour", "price_per_hour"],
    Query(description="Cheapest first by this price"),
]
Limit = Annotated[
    int | None,
    Query(
        ge=1,
        le=MAX_OFFERS_PAGE,
        description=f"Most offers to return; a JSON page holds at most {MAX_OFFERS_PAGE:,} "
        "(the default), exports hold every row unless limited",
    ),
]

CountryParam = Annotated[
    list[Name] | None,
    Query(
        description="ISO 3166-1 alpha-2 codes, repeated or comma-separated, e.g. DE,FR",
        max_length=MAX_LISTED,
    ),
]
ContinentParam = Annotated[
    str | None, Query(max_length=MAX_NAME_CHARS, description="e.g. Europe, North America")
]
JurisdictionParam = Annotated[
    str | None,
    Query(
        max_length=MAX_NAME_CHARS,
        description="eea or eu: offers whose known country is in it (unknown never matches)",
    ),
]
AsOfParam = Annotated[
    UtcDateTime | None,
    Query(description="ISO 8601 time: each provider's last snapshot at or before it"),
]
IntervalParam = Annotated[
    Literal["1h", "6h", "1d", "1w"], Query(description="Bucket size of the history")
]
SinceParam = Annotated[
    UtcDateTime | None, Query(description="Start (ISO 8601 time or date, inclusive)")
]
UntilParam = Annotated[
    UtcDateTime | None, Query(description="End (ISO 8601 time or date, exclusive)")
]
MaxAgeParam = Annotated[
    Duration | None,
    Query(description="Leave out providers whose snapshot is older: 30m, 2h, PT2H (max 10 years)"),
]
