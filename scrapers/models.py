"""The offer model every scraper produces, with its invariants enforced at construction."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CENT_TOLERANCE_USD",
    "FormFactor",
    "Offer",
    "ParseResult",
    "PriceQuotedPer",
    "Pricing",
    "Reject",
]

CENT_TOLERANCE_USD = 0.005
"""`price_per_gpu_hour * gpu_count` must equal `price_per_hour` to the cent (±half a cent)."""


class Pricing(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"


class FormFactor(StrEnum):
    SXM = "SXM"
    PCIE = "PCIe"
    NVL = "NVL"


PriceQuotedPer = Literal["instance", "gpu"]
"""Which price the provider itself quoted; the other one is derived from it."""


class Offer(BaseModel):
    """One priced GPU offer as observed at `observed_at`.

    Build offers with `from_instance_price` or `from_gpu_price` so that a parser states which
    price the provider quoted; the other price is derived, never copied.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1)
    offer_id: str = Field(min_length=1, description="Stable provider key for this offer")
    gpu: str | None = Field(default=None, description="Canonical GPU id, null when unknown")
    gpu_raw: str = Field(min_length=1, description="The provider's own spelling of the GPU")
    form_factor: FormFactor | None = None
    gpu_count: int = Field(gt=0)
    vram_gb: float | None = Field(
        default=None, ge=1, le=1024, description="GB per GPU; outside 1..1024 means a unit mix-up"
    )
    pricing: Pricing
    price_per_hour: float = Field(description="USD per hour for the whole offer")
    price_per_gpu_hour: float = Field(description="USD per GPU-hour")
    price_quoted_per: PriceQuotedPer
    region: str | None = None
    available: bool
    observed_at: datetime
    vcpus: float | None = Field(default=None, ge=0)
    ram_gb: float | None = Field(default=None, ge=0)
    disk_gb: float | None = Field(default=None, ge=0)
    verified: bool | None = None
    tier: str | None = None
    reliability: float | None = Field(default=None, ge=0, le=1)
    country: str | None = Field(default=None, description="ISO 3166-1 alpha-2; null = unknown")
    continent: str | None = None
    eea: bool | None = Field(default=None, description="In the EEA; null when country unknown")
    eu: bool | None = Field(default=None, description="In the EU; null when country unknown")

    @field_validator("price_per_hour", "price_per_gpu_hour")
    @classmethod
    def _positive_finite(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"price must be positive and finite, got {value!r}")
        return value

    @field_validator("observed_at")
    @classmethod
    def _aware_utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("observed_at must be timezone-aware")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _prices_agree(self) -> Self:
        derived = self.price_per_gpu_hour * self.gpu_count
        if abs(derived - self.price_per_hour) > CENT_TOLERANCE_USD:
            raise ValueError(
                f"price_per_gpu_hour {self.price_per_gpu_hour} x gpu_count {self.gpu_count} "
                f"= {derived:.4f} does not match price_per_hour {self.price_per_hour}"
            )
        return self

    @classmethod
    def from_instance_price(cls, *, price_per_hour: float, gpu_count: int, **fields: Any) -> Offer:
        """An offer whose provider quotes the price of the whole instance."""
        per_gpu = price_per_hour / gpu_count if gpu_count else math.nan
        return cls(
            price_per_hour=price_per_hour,
            price_per_gpu_hour=per_gpu,
            gpu_count=gpu_count,
            price_quoted_per="instance",
            **fields,
        )

    @classmethod
    def from_gpu_price(cls, *, price_per_gpu_hour: float, gpu_count: int, **fields: Any) -> Offer:
        """An offer whose provider quotes the price of one GPU."""
        return cls(
            price_per_hour=price_per_gpu_hour * gpu_count,
            price_per_gpu_hour=price_per_gpu_hour,
            gpu_count=gpu_count,
            price_quoted_per="gpu",
            **fields,
        )


@dataclass(frozen=True, slots=True)
class Reject:
    """A provider record that could not become an offer, kept with the reason."""

    provider: str
    record_id: str | None
    reason: str
    raw: str


@dataclass(slots=True)
class ParseResult:
    """What a parser made of one payload: the good offers and the rejected records."""

    offers: list[Offer] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
