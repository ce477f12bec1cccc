"""Response models of provider quality (`GET /quality`, `GET /providers`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["ProviderQualityOut"]


class UnknownSpellingOut(BaseModel):
    gpu_raw: str = Field(description="The provider's spelling, resolved to no catalog GPU")
    offer_count: int
    example_offer_id: str = Field(description="One offer carrying it (see /offers)")


class RejectReasonOut(BaseModel):
    reason: str
    records: int


class FlaggedOfferOut(BaseModel):
    offer_id: str
    run_id: str
    gpu: str
    pricing: str
    side: str = Field(description="low or high: below 1/5 or above 5x the median (settings)")
    suspect: bool = Field(
        description="An outlier not flagged on the same side in the provider's previous run: held "
        "out of the current offers (offers, quotes, metrics, alerts, the index) until it is"
    )
    price_per_gpu_hour: float
    median_per_gpu_hour: float = Field(description="Of the GPU and pricing, all providers")


class RunQualityOut(BaseModel):
    run_id: str
    observed_at: datetime
    state: str = Field(description="ok, failed or not_configured (required key not set)")
    health: str = Field(description="ok, failing, degraded or not_configured")
    offer_count: int
    resolved_count: int
    resolved_share: float | None = Field(description="Offers resolved to a catalog GPU, 0-1")
    reject_count: int
    unknown_names: int = Field(description="Distinct GPU spellings the catalog does not know")
    fields_added: list[str] = Field(description="Answer fields new since the previous good run")
    fields_missing: list[str] = Field(description="Answer fields gone since the previous good run")
    drift: int = Field(description="Fields added plus fields missing")
    reasons: list[str] = Field(description="Why the run is degraded; empty when it is not")


class ProviderQualityOut(BaseModel):
    provider: str
    health: str = Field(description="Of the newest run: ok, failing, degraded or not_configured")
    resolved_share: float | None
    reject_count: int
    unknown_names: int
    drift: int
    reasons: list[str]
    last_run_at: datetime
    unknown_gpus: list[UnknownSpellingOut] = Field(description="Of the newest run")
    rejects_by_reason: list[RejectReasonOut] = Field(description="Of the newest run")
    flagged_offers: list[FlaggedOfferOut] = Field(
        description="Price outliers of the snapshot served (its newest good run)"
    )
    runs: list[RunQualityOut] = Field(description="Runs since `since`, newest first")
