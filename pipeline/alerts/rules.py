"""Alert rules: what a user asks for (`AlertSpec`), validated, and how a rule is stored.

Three kinds of condition:
- `price`: the lowest price per GPU-hour of a GPU (filters: providers, pricing, region, min GPU
  count) is at or below `below_price_per_gpu_hour`; re-arms above that + `band`.
- `availability`: the GPU (same filters) is available at a place (provider and region) where it
  was not at the previous evaluation.
- `workload`: the best quote for a saved workload costs at most `below_cost_usd` in total;
  re-arms above that + `band`.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import orjson

from pipeline.alerts.errors import InvalidAlertError
from pipeline.alerts.targets import Resolver, check_target, resolve_host
from pipeline.catalog import Catalog, get_catalog
from pipeline.collect import provider_module
from pipeline.location import get_locator
from scrapers.models import Pricing
from warehouse.alerts import RuleRow

__all__ = [
    "DEFAULT_BAND",
    "DEFAULT_COOLDOWN",
    "AlertKind",
    "AlertRule",
    "AlertSpec",
    "Condition",
    "rule_from_row",
    "validate_spec",
]

DEFAULT_BAND = 0.05
"""Hysteresis in the threshold's unit: USD per GPU-hour (price) or USD (workload cost)."""
DEFAULT_COOLDOWN = timedelta(0)
"""No cooldown unless asked: the edge and the band alone keep a rule from repeating."""
MAX_COOLDOWN = timedelta(days=30)


class AlertKind(StrEnum):
    PRICE = "price"
    AVAILABILITY = "availability"
    WORKLOAD = "workload"


@dataclass(frozen=True, slots=True)
class Condition:
    kind: AlertKind
    gpu: str | None = None
    providers: tuple[str, ...] = ()
    pricing: Pricing | None = None
    region: str | None = None
    countries: tuple[str, ...] = ()
    continent: str | None = None
    jurisdiction: str | None = None
    """Where the offers must be (issue: data residency); an unknown country never matches."""
    min_gpu_count: int | None = None
    below_price_per_gpu_hour: float | None = None
    below_cost_usd: float | None = None
    workload: Mapping[str, Any] | None = None
    """The saved workload (the body `POST /quotes` takes), for `workload` rules."""

    @property
    def threshold(self) -> float | None:
        if self.kind is AlertKind.PRICE:
            return self.below_price_per_gpu_hour
        if self.kind is AlertKind.WORKLOAD:
            return self.below_cost_usd
        return None

    def to_json(self) -> str:
        data = {
            "kind": str(self.kind),
            "gpu": self.gpu,
            "providers": list(self.providers),
            "pricing": str(self.pricing) if self.pricing else None,
            "region": self.region,
            "countries": list(self.countries),
            "continent": self.continent,
            "jurisdiction": self.jurisdiction,
            "min_gpu_count": self.min_gpu_count,
            "below_price_per_gpu_hour": self.below_price_per_gpu_hour,
            "below_cost_usd": self.below_cost_usd,
            "workload": dict(self.workload) if self.workload is not None else None,
        }
        return orjson.dumps(data).decode()

    @classmethod
    def from_json(cls, text: str) -> Condition:
        data = orjson.loads(text)
        return cls(
            kind=AlertKind(data["kind"]),
            gpu=data.get("gpu"),
            providers=tuple(data.get("providers") or ()),
            pricing=Pricing(data["pricing"]) if data.get("pricing") else None,
            region=data.get("region"),
            countries=tuple(data.get("countries") or ()),
            continent=data.get("continent"),
            jurisdiction=data.get("jurisdiction"),
            min_gpu_count=data.get("min_gpu_count"),
            below_price_per_gpu_hour=data.get("below_price_per_gpu_hour"),
            below_cost_usd=data.get("below_cost_usd"),
            workload=data.get("workload"),
        )


@dataclass(frozen=True, slots=True)
class AlertSpec:
    """A rule as asked for, before validation."""

    url: str
    condition: Condition
    band: float = DEFAULT_BAND
    cooldown: timedelta = DEFAULT_COOLDOWN


@dataclass(frozen=True, slots=True)
class AlertRule:
    """A stored rule as shown to users: everything but its secret."""

    rule_id: str
    url: str
    condition: Condition
    band: float
    cooldown: timedelta
    created_at: datetime
    disabled_at: datetime | None = None
    disabled_reason: str | None = None
    evaluation_error: str | None = None
    """Why its last evaluation failed (the other rules went on); None once one succeeds."""
    evaluation_error_at: datetime | None = None
    secret: str = field(default="", repr=False, compare=False)
    """Only for signing; never shown after creation, never logged."""


def new_rule_id() -> str:
    return f"alr_{uuid.uuid4().hex[:24]}"


def rule_from_row(row: RuleRow) -> AlertRule:
    return AlertRule(
        rule_id=row.rule_id,
        url=row.url,
        condition=Condition.from_json(row.condition_json),
        band=row.band,
        cooldown=timedelta(seconds=row.cooldown_s),
        created_at=row.created_at,
        disabled_at=row.disabled_at,
        disabled_reason=row.disabled_reason,
        evaluation_error=row.evaluation_error,
        evaluation_error_at=row.evaluation_error_at,
        secret=row.secret,
    )


def rule_to_row(rule: AlertRule) -> RuleRow:
    return RuleRow(
        rule_id=rule.rule_id,
        kind=str(rule.condition.kind),
        url=rule.url,
        secret=rule.secret,
        condition_json=rule.condition.to_json(),
        band=rule.band,
        cooldown_s=rule.cooldown.total_seconds(),
        created_at=rule.created_at,
        disabled_at=rule.disabled_at,
        disabled_reason=rule.disabled_reason,
        evaluation_error=rule.evaluation_error,
        evaluation_error_at=rule.evaluation_error_at,
    )


def _positive(name: str, value: float | None) -> float:
    if value is None:
        raise InvalidAlertError(name, "is required for this kind of alert")
    if not math.isfinite(value) or value <= 0:
        raise InvalidAlertError(name, f"must be a positive number, got {value}")
    return value


def _absent(condition: Condition, *names: str) -> None:
    for name in names:
        if getattr(condition, name) is not None:
            raise InvalidAlertError(name, f"does not apply to a {condition.kind} alert")


def _check_condition(condition: Condition, catalog: Catalog) -> None:
    for name in condition.providers:
        provider_module(name)
    get_locator().parse_filter(
        list(condition.countries), condition.continent, condition.jurisdiction
    )
    if condition.min_gpu_count is not None and condition.min_gpu_count < 1:
        raise InvalidAlertError("min_gpu_count", "must be at least 1")
    if condition.kind is AlertKind.WORKLOAD:
        from pipeline.alerts.workloads import quote_request

        _absent(condition, "below_price_per_gpu_hour", "min_gpu_count")
        _positive("below_cost_usd", condition.below_cost_usd)
        if condition.workload is None:
            raise InvalidAlertError("workload", "is required for a workload alert")
        quote_request(condition)  # raises on a workload that cannot be quoted
        if condition.gpu:
            catalog.ids_for_query(condition.gpu)
        return
    if not condition.gpu:
        raise InvalidAlertError("gpu", f"is required for a {condition.kind} alert")
    catalog.ids_for_query(condition.gpu)
    _absent(condition, "below_cost_usd", "workload")
    if condition.kind is AlertKind.PRICE:
        _positive("below_price_per_gpu_hour", condition.below_price_per_gpu_hour)
    else:
        _absent(condition, "below_price_per_gpu_hour")


def validate_spec(
    spec: AlertSpec,
    *,
    allow_private: bool,
    resolver: Resolver = resolve_host,
    catalog: Catalog | None = None,
) -> AlertSpec:
    """The spec if it can become a rule; else `InvalidAlertError` or `TargetError`."""
    check_target(spec.url, allow_private=allow_private, resolver=resolver)
    _check_condition(spec.condition, catalog or get_catalog())
    if not math.isfinite(spec.band) or spec.band < 0:
        raise InvalidAlertError("band", f"must be zero or more, got {spec.band}")
    if spec.cooldown < timedelta(0) or spec.cooldown > MAX_COOLDOWN:
        raise InvalidAlertError("cooldown", f"must be between 0 and {MAX_COOLDOWN.days} days")
    return spec
