"""Response models: what the API returns and what `--format json` prints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from scrapers.models import FormFactor, PriceQuotedPer, Pricing

__all__ = [
    "GpuOut",
    "GpusPage",
    "HealthOut",
    "OfferOut",
    "OffersPage",
    "ResolveOut",
    "UnknownGpuOut",
    "UnknownGpusPage",
]


class OfferOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    provider: str
    offer_id: str
    gpu: str | None = Field(description="Canonical GPU id; null when the catalog does not know it")
    gpu_raw: str = Field(description="The provider's own spelling")
    form_factor: FormFactor | None
    gpu_count: int
    vram_gb: float | None = Field(description="GB per GPU")
    pricing: Pricing
    price_per_hour: float = Field(description="USD per hour for the whole offer")
    price_per_gpu_hour: float = Field(description="USD per GPU-hour")
    price_quoted_per: PriceQuotedPer = Field(
        description="Which price the provider quoted; the other is derived"
    )
    region: str | None
    available: bool = Field(description="Rentable now; false means listed but sold out or taken")
    observed_at: datetime
    vcpus: float | None
    ram_gb: float | None
    disk_gb: float | None
    verified: bool | None
    tier: str | None
    reliability: float | None
    run_id: str = Field(description="The collection run that observed it (see /providers)")


class OffersPage(BaseModel):
    offers: list[OfferOut]
    count: int


class GpuOut(BaseModel):
    id: str
    family: str
    vendor: str
    vram_gb: float
    form_factors: list[str]
    bf16_tflops_dense: float | None
    mem_bw_gbps: float | None
    aliases: list[str]


class GpusPage(BaseModel):
    gpus: list[GpuOut]
    count: int


class ResolveOut(BaseModel):
    name: str
    gpu: str | None = Field(description="What this spelling resolves to as a provider's GPU name")
    form_factor: FormFactor | None
    matches: list[str] = Field(description="The ids `gpu=<name>` selects in /offers")


class UnknownGpuOut(BaseModel):
    gpu_raw: str
    providers: list[str]
    offers: int
    last_observed_at: datetime


class UnknownGpusPage(BaseModel):
    gpus: list[UnknownGpuOut]
    count: int


class HealthOut(BaseModel):
    status: str
    schema_version: int
