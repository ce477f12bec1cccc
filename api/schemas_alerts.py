"""Request and response models of `/alerts`; `gpuprices alerts ... --format json` prints them too.

The secret appears in one model only, `AlertCreatedOut`, returned once by `POST /alerts`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from api.parameters import MAX_LISTED, MAX_NAME_CHARS, Name
from api.schemas_quotes import QuoteIn
from pipeline.alerts import (
    DEFAULT_BAND,
    DEFAULT_COOLDOWN,
    AlertKind,
    AlertSpec,
    AlertStatus,
    Condition,
    CreatedAlert,
    DeliveryLog,
)
from pipeline.timeparse import Duration
from scrapers.models import Pricing

__all__ = [
    "AlertCreatedOut",
    "AlertIn",
    "AlertOut",
    "AlertStateOut",
    "AlertsPage",
    "AttemptOut",
    "DeliveriesPage",
    "DeliveryOut",
    "alert_out",
    "created_out",
    "delivery_out",
]


MAX_URL_CHARS = 2048


class AlertIn(BaseModel):
    """A webhook target and one condition; which fields apply depends on `kind`."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    url: str = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description="Webhook target: https to a public address (http and private addresses "
        "only with GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true)",
        examples=["https://example.com/hooks/gpu"],
    )
    kind: AlertKind = Field(description="price, availability or workload")
    gpu: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="Id (H100-80GB), family (H100) or any spelling",
    )
    providers: list[Name] = Field(
        default_factory=list, max_length=MAX_LISTED, description="Only these providers"
    )
    pricing: Pricing | None = Field(None, description="on_demand or spot")
    region: str | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS, description="Part of the region text"
    )
    country: list[Name] = Field(
        default_factory=list, max_length=MAX_LISTED, description="ISO 3166-1 alpha-2 codes"
    )
    continent: str | None = Field(None, max_length=MAX_NAME_CHARS, description="e.g. Europe")
    jurisdiction: str | None = Field(
        None, max_length=MAX_NAME_CHARS, description="eea or eu (unknown country never matches)"
    )
    min_gpu_count: int | None = Field(
        None, ge=1, le=1024, description="Offers with at least this many"
    )
    below_price_per_gpu_hour: float | None = Field(
        None, gt=0, le=1e6, description="price: fire at or below this, USD per GPU-hour"
    )
    below_cost_usd: float | None = Field(
        None,
        gt=0,
        le=1e12,
        description="workload: fire when the best quote costs at most this, USD",
    )
    workload: dict[str, Any] | None = Field(
        None,
        description="workload: the job, as the body of POST /quotes (validated as that body)",
    )
    band: float = Field(
        DEFAULT_BAND,
        ge=0,
        le=1e6,
        description="Re-arm only above threshold + band (USD per GPU-hour, or USD for workload)",
    )
    cooldown: Duration = Field(
        DEFAULT_COOLDOWN,
        description="No second event within this long: 90s, 30m, 1h, 1d or ISO 8601 PT1H "
        "(at most 30 days)",
    )

    @field_validator("workload")
    @classmethod
    def _quotable(cls, workload: dict[str, Any] | None) -> dict[str, Any] | None:
        """The saved job is checked exactly as `POST /quotes` checks its body."""
        if workload is not None:
            try:
                QuoteIn.model_validate(workload)
            except ValidationError as exc:
                raise ValueError(
                    "; ".join(
                        f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]
                    )
                ) from None
        return workload

    def spec(self) -> AlertSpec:
        condition = Condition(
            kind=self.kind,
            gpu=self.gpu,
            providers=tuple(self.providers),
            pricing=self.pricing,
            region=self.region,
            countries=tuple(self.country),
            continent=self.continent,
            jurisdiction=self.jurisdiction,
            min_gpu_count=self.min_gpu_count,
            below_price_per_gpu_hour=self.below_price_per_gpu_hour,
            below_cost_usd=self.below_cost_usd,
            workload=self.workload,
        )
        return AlertSpec(url=self.url, condition=condition, band=self.band, cooldown=self.cooldown)


class AlertStateOut(BaseModel):
    armed: bool = Field(description="Fires the next time the condition holds")
    last_value: float | None = Field(
        description="Lowest price per GPU-hour, best cost (USD) or places available, last seen"
    )
    last_fired_at: datetime | None
    evaluated_at: datetime


class AlertOut(BaseModel):
    id: str
    url: str
    kind: AlertKind
    gpu: str | None
    providers: list[str]
    pricing: Pricing | None
    region: str | None
    country: list[str]
    continent: str | None
    jurisdiction: str | None
    min_gpu_count: int | None
    below_price_per_gpu_hour: float | None
    below_cost_usd: float | None
    workload: dict[str, Any] | None
    band: float
    cooldown_seconds: float
    created_at: datetime
    disabled_at: datetime | None = Field(description="Set when the endpoint answered 410 Gone")
    disabled_reason: str | None
    state: AlertStateOut | None = Field(description="Null until the first evaluation")


class AlertCreatedOut(AlertOut):
    secret: str = Field(
        description="whsec_...: verifies webhook-signature; shown only in this answer"
    )


class AlertsPage(BaseModel):
    alerts: list[AlertOut]
    count: int


class AttemptOut(BaseModel):
    attempt: int
    attempted_at: datetime
    status_code: int | None = Field(description="Null when no answer came (timeout, refused)")
    latency_ms: float
    outcome: str = Field(description="delivered, retry, failed or gone")
    error: str | None


class DeliveryOut(BaseModel):
    id: str = Field(description="The webhook-id header, the same on every attempt")
    event_type: str
    status: str = Field(description="pending, delivered, failed or cancelled")
    attempt_count: int
    created_at: datetime
    next_attempt_at: datetime | None
    finished_at: datetime | None
    last_error: str | None
    event: dict[str, Any] = Field(description="The body sent")
    attempts: list[AttemptOut]


class DeliveriesPage(BaseModel):
    deliveries: list[DeliveryOut]
    count: int


def alert_out(status: AlertStatus) -> AlertOut:
    rule, state, c = status.rule, status.state, status.rule.condition
    return AlertOut(
        id=rule.rule_id,
        url=rule.url,
        kind=c.kind,
        gpu=c.gpu,
        providers=list(c.providers),
        pricing=c.pricing,
        region=c.region,
        country=list(c.countries),
        continent=c.continent,
        jurisdiction=c.jurisdiction,
        min_gpu_count=c.min_gpu_count,
        below_price_per_gpu_hour=c.below_price_per_gpu_hour,
        below_cost_usd=c.below_cost_usd,
        workload=dict(c.workload) if c.workload is not None else None,
        band=rule.band,
        cooldown_seconds=rule.cooldown.total_seconds(),
        created_at=rule.created_at,
        disabled_at=rule.disabled_at,
        disabled_reason=rule.disabled_reason,
        state=AlertStateOut(
            armed=state.armed,
            last_value=state.last_value,
            last_fired_at=state.last_fired_at,
            evaluated_at=state.evaluated_at,
        )
        if state is not None
        else None,
    )


def created_out(created: CreatedAlert) -> AlertCreatedOut:
    shown = alert_out(AlertStatus(created.rule, None))
    return AlertCreatedOut(**shown.model_dump(), secret=created.secret)


def delivery_out(log: DeliveryLog) -> DeliveryOut:
    d = log.delivery
    return DeliveryOut(
        id=d.delivery_id,
        event_type=d.event_type,
        status=d.status,
        attempt_count=d.attempts,
        created_at=d.created_at,
        next_attempt_at=d.next_attempt_at if d.status == "pending" else None,
        finished_at=d.finished_at,
        last_error=d.last_error,
        event=orjson.loads(d.body),
        attempts=[
            AttemptOut(
                attempt=a.attempt,
                attempted_at=a.attempted_at,
                status_code=a.status_code,
                latency_ms=a.latency_ms,
                outcome=a.outcome,
                error=a.error,
            )
            for a in log.attempts
        ],
    )
