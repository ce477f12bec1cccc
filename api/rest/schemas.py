"""Response models: what the API returns and what `--format json` prints."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field

from api.rest.schemas_quality import ProviderQualityOut
from scrapers.models import FormFactor, PriceQuotedPer, Pricing

__all__ = [
    "GpuOut",
    "GpusPage",
    "HealthOut",
    "OfferOut",
    "OffersPage",
    "ProviderFreshnessOut",
    "ProviderHealthOut",
    "ProvidersPage",
    "QualityPage",
    "ReadyOut",
    "ResolveOut",
    "UnknownGpuOut",
    "UnknownGpusPage",
]


class OfferOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    run_id: str = Field(description="The collection run that observed it (see /providers)")
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
    country: str | None = Field(default=None, description="ISO 3166-1 alpha-2; null = unknown")
    continent: str | None = None
    eea: bool | None = Field(default=None, description="In the EEA; null when country unknown")
    eu: bool | None = Field(default=None, description="In the EU; null when country unknown")
    currency: str | None = Field(default=None, description="Currency the provider published")
    price_per_hour_native: float | None = Field(
        default=None, description="Whole offer per hour in `currency`, as published"
    )
    fx_rate: float | None = Field(
        default=None, description="USD per unit of `currency` (ECB); null for USD offers"
    )
    fx_date: date | None = Field(default=None, description="Date of the ECB rate used")
    setup_fee_native: float | None = Field(default=None, description="Setup fee in `currency`")
    setup_fee_usd: float | None = Field(default=None, description="One-off setup fee, USD")
    price_per_month_native: float | None = None
    price_per_month_usd: float | None = Field(
        default=None, description="Monthly cap on the hourly billing, USD"
    )
    published_usd_per_hour: float | None = Field(
        default=None,
        description="The provider's own USD figure beside a non-USD price: a check, never the "
        "price (that is the ECB conversion)",
    )
    seller: str | None = Field(
        default=None,
        description="Who sells the GPU behind an aggregator's offer (a provider name where we "
        "have one, e.g. lambda); null when `provider` sells it itself",
    )
    price_per_pflop_hour: float | None = Field(
        default=None,
        description="USD per dense BF16 PFLOP-hour (FP16 where the card has no BF16), from the "
        "catalog's TFLOPs; null when the GPU or its figure is unknown",
    )
    nvlink: bool | None = Field(
        default=None,
        description="GPUs linked by NVLink (SXM boards); null where the catalog cannot tell "
        "(a PCIe card a bridge may link)",
    )
    vendor: str | None = Field(
        default=None,
        description="Who makes the GPU (nvidia, amd, intel), from the catalog; null when the GPU "
        "is unknown",
    )
    stale: bool = Field(
        default=False,
        description="Its provider's snapshot is stale, or its exchange rate is over 7 days old",
    )


class OffersPage(BaseModel):
    offers: list[OfferOut]
    count: int
    providers: list[ProviderFreshnessOut] = Field(
        description="Freshness of each provider whose snapshot this answer draws on"
    )


class GpuOut(BaseModel):
    id: str
    family: str
    vendor: str
    vram_gb: float
    form_factors: list[str]
    bf16: bool = Field(description="Computes in BF16; without it, training is quoted in FP16")
    bf16_tflops_dense: float | None
    fp16_tflops_dense: float | None
    mem_bw_gbps: float | None
    aliases: list[str]
    source: str = Field(description="The public spec sheet the figures come from")


class GpusPage(BaseModel):
    gpus: list[GpuOut]
    count: int


class ResolveOut(BaseModel):
    name: str
    gpu: str | None = Field(description="What this spelling resolves to as a provider's GPU name")
    form_factor: FormFactor | None
    vram_gb: float | None = Field(description="The catalog size the name (or vram_gb) picked")
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
    demo: bool = Field(False, description="True when this server shows demo data (gpuprices demo)")


class ProviderFreshnessOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    provider: str
    observed_at: datetime | None = Field(description="When the snapshot served was observed")
    age_seconds: float | None
    stale: bool = Field(description="Older than stale_after_seconds, or its last run failed")
    stale_after_seconds: float
    offer_count: int = Field(description="Offers in the snapshot served")
    last_run_at: datetime | None
    last_status: str | None
    last_success_at: datetime | None
    last_error: str | None
    next_run_at: datetime | None = Field(description="Next scheduled run (null without scheduler)")
    interval_seconds: float | None
    kind: str = Field(default="offers", description="offers, or rates (a rate source: the ECB)")
    last_rate_date: date | None = Field(
        default=None, description="A rate source's newest rate date (null for providers)"
    )


class ProviderHealthOut(ProviderFreshnessOut):
    health: str | None = Field(
        None, description="Quality of the newest run: ok, failing, degraded or not_configured"
    )
    resolved_share: float | None = Field(None, description="Offers resolved to a catalog GPU")
    unknown_names: int | None = Field(None, description="GPU spellings the catalog does not know")
    drift: int | None = Field(None, description="Answer fields added or missing")
    reasons: list[str] = Field(default_factory=list, description="Why it is degraded")


class ProvidersPage(BaseModel):
    providers: list[ProviderHealthOut]
    demo: bool = Field(
        False, description="True when the offers are recorded demo data, not live (gpuprices demo)"
    )


class ReadyOut(BaseModel):
    ready: bool
    database: bool
    data_path: bool | None = Field(
        default=None,
        description="Whether the lake's data path answered a listing (probed at most every few "
        "seconds); null on an embedded file, or when the database cannot be read",
    )
    scheduler: str = Field(description="running, stopped or disabled")
    providers: list[ProviderFreshnessOut]


class QuarantinedOut(BaseModel):
    provider: str
    record_id: str | None
    reason: str
    raw: str
    observed_at: datetime
    run_id: str


class QualityCountOut(BaseModel):
    provider: str
    records: int
    last_observed_at: datetime


class QualityPage(BaseModel):
    providers: list[ProviderQualityOut] = Field(
        description="Per provider: health of the newest run, its runs since `since`, unknown GPU "
        "spellings, rejects by reason and flagged price outliers"
    )
    latest: list[QualityCountOut] = Field(description="Quarantined records in latest snapshots")
    records: list[QuarantinedOut]
    count: int


class HistoryPointOut(BaseModel):
    t: datetime = Field(description="Bucket start, UTC")
    min: float = Field(description="Cheapest listed offer, sold out or not")
    min_available: float | None = Field(
        default=None, description="Cheapest offer rentable then; null when none was (or unknown)"
    )
    p25: float
    median: float
    max: float
    offers: int = Field(description="Offers listed (mean per snapshot in the bucket)")
    available: int = Field(description="Offers rentable (mean per snapshot in the bucket)")
    snapshots: int = Field(description="Good snapshots in the bucket")


class HistorySeriesOut(BaseModel):
    gpu: str
    form_factor: str | None = Field(default=None, description="SXM, PCIe...: never merged")
    provider: str
    pricing: Pricing
    points: list[HistoryPointOut]


class HistoryOut(BaseModel):
    gpu: str
    gpus: list[str] = Field(description="Canonical ids the gpu parameter selected")
    interval: str
    since: datetime
    until: datetime
    series: list[HistorySeriesOut]


class RegionOut(BaseModel):
    provider: str
    region: str | None = Field(description="The provider's own location text or id")
    country: str | None
    continent: str | None
    eea: bool | None
    eu: bool | None
    source: str | None = Field(description="Why this location maps to this country")
    offers: int = Field(description="Offers there in the current snapshots")


class RegionsPage(BaseModel):
    regions: list[RegionOut]
    count: int
