"""Request and response models of `/alerts`; `gpuprices alerts ... --format json` prints them too.

The secret appears in one model only, `AlertCreatedOut`, returned once by `POST /alerts`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from api.rest.schemas_quotes import QuoteIn
from pipeline.alerts import (
    ALERT_SCOPE,
    DEFAULT_BAND,
    DEFAULT_COOLDOWN,
    AlertKind,
    AlertSpec,
    AlertStatus,
    Condition,
    CreatedAlert,
    DeliveryLog,
)
from pipeline.market.scope import OfferScope, front_end_model
from pipeline.timeparse import Duration

__all__ = [
    "AlertCreatedOut",
    "AlertIn",
    "AlertOut",
    "AlertsPage",
    "DeliveriesPage",
    "DeliveryOut",
    "alert_out",
    "created_out",
    "delivery_out",
]


MAX_URL_CHARS = 2048
AlertScope = front_end_model(OfferScope, ALERT_SCOPE, "AlertScope")
"""The offers an alert watches, as the API names them (`provider`, `country`, ...)."""


class AlertIn(AlertScope):  # type: ignore[misc,valid-type]  # a model built from the scope's fields
    """A webhook target and one condition; which fields apply depends on `kind`."""

    model_config = ConfigDict(allow_inf_nan=False)

    url: str = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        description="Webhook target: https to a public address (http and private addresses "
        "only with GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true)",
        examples=["https://example.com/hooks/gpu"],
    )
    kind: AlertKind = Field(
        description="price, availability, workload, index or provider_health (a provider "
        "degraded, then recovered; filter: provider)"
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
    index_change_percent: float | None = Field(
        None,
        description="index: fire when the hourly index moved this much in %, e.g. -10 (a drop)",
    )
    within: Duration | None = Field(
        None, description="index: against its value this long before, e.g. 24h"
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
            scope=OfferScope.model_validate(self.model_dump(include=set(ALERT_SCOPE))),
            below_price_per_gpu_hour=self.below_price_per_gpu_hour,
            below_cost_usd=self.below_cost_usd,
            workload=self.workload,
            index_change_percent=self.index_change_percent,
            within=self.within,
        )
        return AlertSpec(url=self.url, condition=condition, band=self.band, cooldown=self.cooldown)


class AlertStateOut(BaseModel):
    armed: bool = Field(description="Fires the next time the condition holds")
    last_value: float | None = Field(
        description="Lowest price per GPU-hour, best cost (USD) or places available, last seen"
    )
    last_fired_at: datetime | None
    evaluated_at: datetime


class AlertOut(AlertScope):  # type: ignore[misc,valid-type]  # a model built from the scope's fields
    id: str
    url: str
    kind: AlertKind
    below_price_per_gpu_hour: float | None
    below_cost_usd: float | None
    workload: dict[str, Any] | None
    index_change_percent: float | None = None
    within_seconds: float | None = None
    band: float
    cooldown_seconds: float
    created_at: datetime
    disabled_at: datetime | None = Field(description="Set when the endpoint answered 410 Gone")
    disabled_reason: str | None
    evaluation_error: str | None = Field(
        default=None,
        description="Why the last evaluation of this rule failed (the others went on); "
        "null while it evaluates fine",
    )
    evaluation_error_at: datetime | None = None
    state: AlertStateOut | None = Field(description="Null until the first evaluation")


class AlertCreatedOut(AlertOut):
    secret: str = Field(
        description="whsec_...: verifies webhook-signature; shown only in this answer"
    )


class AlertsPage(BaseModel):
    alerts: list[AlertOut]
    count: int = Field(description="Rules on this page")
    total: int = Field(0, description="Rules in all")
    next_offset: int | None = Field(None, description="`offset` of the next page; null: last")


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


_RULE_FIELDS = (
    "url",
    "band",
    "created_at",
    "disabled_at",
    "disabled_reason",
    "evaluation_error",
    "evaluation_error_at",
)
_CONDITION_FIELDS = ("kind", "below_price_per_gpu_hour", "below_cost_usd", "index_change_percent")
_DELIVERY_FIELDS = ("event_type", "status", "created_at", "finished_at", "last_error")
"""The fields a response shows as the rule, its condition or the delivery holds them."""


def _same(source: object, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(source, name) for name in names}


def alert_out(status: AlertStatus) -> AlertOut:
    rule, state, c = status.rule, status.state, status.rule.condition
    return AlertOut(
        id=rule.rule_id,
        **_same(rule, _RULE_FIELDS),
        **_same(c, _CONDITION_FIELDS),
        **c.scope.model_dump(include=set(ALERT_SCOPE)),
        workload=dict(c.workload) if c.workload is not None else None,
        within_seconds=c.within.total_seconds() if c.within is not None else None,
        cooldown_seconds=rule.cooldown.total_seconds(),
        state=AlertStateOut.model_validate(state, from_attributes=True) if state else None,
    )


def created_out(created: CreatedAlert) -> AlertCreatedOut:
    shown = alert_out(AlertStatus(created.rule, None))
    return AlertCreatedOut(**shown.model_dump(), secret=created.secret)


def delivery_out(log: DeliveryLog) -> DeliveryOut:
    d = log.delivery
    return DeliveryOut(
        id=d.delivery_id,
        **_same(d, _DELIVERY_FIELDS),
        attempt_count=d.attempts,
        next_attempt_at=d.next_attempt_at if d.status == "pending" else None,
        event=orjson.loads(d.body),
        attempts=[AttemptOut.model_validate(a, from_attributes=True) for a in log.attempts],
    )
