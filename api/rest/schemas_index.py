"""Response models of the price index (`/index`, `/index/explain`) and `/market`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from pipeline.market.outlook import Movement
from pipeline.workload.quotes import HistoryKey, history_key, quote_history
from pipeline.workload.ranking import Quote

__all__ = [
    "IndexExplainOut",
    "IndexOut",
    "MarketOut",
    "QuoteHistoryOut",
    "quote_history_out",
]

Methodology = Literal["v1"]


class IndexPointOut(BaseModel):
    t: datetime = Field(description="Bucket start, UTC")
    value: float = Field(description="Median of the providers' values, USD per GPU-hour")
    providers: int = Field(description="Providers that contributed a value")


class IndexSeriesOut(BaseModel):
    gpu: str
    pricing: str
    form_factor: str | None = Field(description="null: every form factor of the GPU")
    points: list[IndexPointOut] = Field(description="Buckets without a contribution are gaps")


class IndexOut(BaseModel):
    methodology: Methodology
    interval: str
    since: datetime
    until: datetime
    series: list[IndexSeriesOut]


class ContributionOut(BaseModel):
    provider: str
    value: float = Field(description="Cheapest available USD per GPU-hour in its snapshot")
    offer_id: str | None = Field(description="The offer that price came from")
    form_factor: str | None
    run_id: str = Field(description="The snapshot (collection run), see /providers")
    snapshot_at: datetime = Field(description="When that snapshot was taken")


class ExcludedOut(BaseModel):
    provider: str
    reason: Literal["failed run", "no snapshot in bucket", "no available offer"]
    snapshot_at: datetime | None = Field(description="Its last good snapshot in the bucket")


class IndexExplainOut(BaseModel):
    methodology: Methodology
    gpu: str
    pricing: str
    form_factor: str | None
    interval: str
    t: datetime = Field(description="Bucket start, UTC")
    value: float | None = Field(description="Median of the contributions; null: a gap")
    providers: int
    contributions: list[ContributionOut]
    excluded: list[ExcludedOut]


class BelowOut(BaseModel):
    price: float = Field(description="USD per GPU-hour")
    share: float | None = Field(description="Share (0-1) of observed hours under that price")


class MarketOut(BaseModel):
    methodology: Methodology
    gpu: str
    pricing: str
    form_factor: str | None
    days: int = Field(description="Days asked for")
    history_days: int = Field(description="Daily index values the figures cover")
    since: datetime = Field(description="Start of the window, UTC")
    now: float | None = Field(description="Latest hourly index value, USD per GPU-hour")
    min: float | None
    p10: float | None
    p25: float | None
    median: float | None
    p75: float | None
    p90: float | None
    max: float | None
    percentile_now: float | None = Field(
        description="% of the days at or below now; null when the days never moved"
    )
    movement: Movement | None = Field(
        description='"none": one price all window (no movement); "moved"; null: no history'
    )
    availability: float | None = Field(
        description="Share (0-1) of observed hours with at least one available offer"
    )
    below: list[BelowOut]
    volatility: float | None = Field(description="Standard deviation of daily log changes")
    cheapest_hour_utc: int | None = Field(description="Hour of day with the lowest mean value")


class QuoteHistoryOut(BaseModel):
    """The same job at its own provider's prices for its GPU over the last `days` days."""

    basis: Literal["provider_lowest_available"] = Field(
        description="Each day's lowest available price per GPU-hour of the quote's provider for "
        "its GPU, form factor and pricing (not the GPU's cross-provider index)"
    )
    provider: str
    gpu: str
    form_factor: str | None
    pricing: str
    days: int
    history_days: int = Field(description="Days with a price behind the figures")
    p10_cost_usd: float = Field(description="The job at the 10th percentile of those days")
    median_cost_usd: float
    p90_cost_usd: float
    now_price_per_gpu_hour: float = Field(description="The quoted offer's own price now")
    percentile_now: float | None = Field(
        description="% of those days priced at or below the offer now; null when the days "
        "never moved"
    )
    movement: Movement | None = Field(
        description='"none": one price every day (no movement); "moved"'
    )


def quote_history_out(
    quote: Quote, markets: Mapping[HistoryKey, Sequence[float]]
) -> QuoteHistoryOut | None:
    """The `history` block of one quote, from the daily series of its result."""
    history = quote_history(quote, markets.get(history_key(quote.offer)))
    return QuoteHistoryOut.model_validate(history) if history else None
