"""Query parameters shared by the routes, declared once with units and bounds."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Path, Query

from scrapers.models import FormFactor, Pricing

__all__ = [
    "ContinentParam",
    "CountryParam",
    "JurisdictionParam",
    "Path",
    "AsOfParam",
    "FormFactorParam",
    "IntervalParam",
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

GpuParam = Annotated[
    str | None,
    Query(
        description="Canonical id (A100-80GB), family (A100) or any provider spelling",
        min_length=1,
        examples=["A100-80GB"],
    ),
]
ProviderParam = Annotated[
    list[str] | None,
    Query(description="Provider name; repeat or comma-separate for several"),
]
PricingParam = Annotated[Pricing | None, Query(description="on_demand or spot")]
RegionParam = Annotated[
    str | None, Query(min_length=1, description="Case-insensitive part of the region text")
]
FormFactorParam = Annotated[FormFactor | None, Query(description="SXM, PCIe or NVL")]
MaxPricePerGpu = Annotated[float | None, Query(ge=0, description="Upper bound, USD per GPU-hour")]
IncludeUnavailable = Annotated[
    bool, Query(description="Also list offers that are listed but not rentable now")
]
SortParam = Annotated[
    Literal["price_per_gpu_hour", "price_per_hour"],
    Query(description="Cheapest first by this price"),
]
Limit = Annotated[int | None, Query(ge=1, le=100_000, description="Most offers to return")]

CountryParam = Annotated[
    list[str] | None,
    Query(description="ISO 3166-1 alpha-2 codes, repeated or comma-separated, e.g. DE,FR"),
]
ContinentParam = Annotated[str | None, Query(description="e.g. Europe, North America")]
JurisdictionParam = Annotated[
    str | None,
    Query(description="eea or eu: offers whose known country is in it (unknown never matches)"),
]
AsOfParam = Annotated[
    datetime | None,
    Query(description="ISO 8601 time: each provider's last snapshot at or before it"),
]
IntervalParam = Annotated[
    Literal["1h", "6h", "1d", "1w"], Query(description="Bucket size of the history")
]
SinceParam = Annotated[datetime | None, Query(description="Start (ISO 8601, inclusive)")]
UntilParam = Annotated[datetime | None, Query(description="End (ISO 8601, exclusive)")]
