"""Alert rules: what a user asks for (`AlertSpec`), validated, and how a rule is stored.

Three kinds of condition:
- `price`: the lowest price per GPU-hour of a GPU (filters: providers, pricing, region, min GPU
  count) is at or below `below_price_per_gpu_hour`; re-arms above that + `band`.
- `availability`: the GPU (same filters) is available at a place (provider and region) where it
  was not at the previous evaluation.
- `workload`: the best quote for a saved workload costs at most `below_cost_usd` in total;
  re-arms above that + `band`.
- `provider_health`: a provider (all, or those in `providers`) became degraded (failed runs in
  a row, resolved share fell, answer shape changed: pipeline/collection/quality.py): one
  `provider.degraded` event per episode, then one `provider.recovered` after its next clean run.
- `index`: the hourly price index of a GPU (on-demand unless `pricing` says spot) moved by
  `index_change_percent` or more (a negative value: fell by that much) against its value
  `within` before; re-arms once the move no longer holds.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, fields
from datetime import timedelta

from pipeline.alerts.condition import ALERT_SCOPE, AlertKind, Condition
from pipeline.alerts.errors import InvalidAlertError
from pipeline.alerts.targets import Resolver, check_target, resolve_host
from pipeline.alerts.workloads import quote_request
from pipeline.catalog import Catalog, get_catalog
from pipeline.errors import PipelineError
from pipeline.market.index import INDEX_SCOPE, one_gpu
from pipeline.market.scope import resolve
from warehouse.alerts import RuleRecord, RuleRow

__all__ = [
    "ALERT_SCOPE",
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
MAX_WITHIN = timedelta(days=30)
"""Longest look-back of an index alert."""
MAX_INDEX_CHANGE_PERCENT = 1000.0


@dataclass(frozen=True, slots=True)
class AlertSpec:
    """A rule as asked for, before validation."""

    url: str
    condition: Condition
    band: float = DEFAULT_BAND
    cooldown: timedelta = DEFAULT_COOLDOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class AlertRule(RuleRecord):
    """A stored rule as shown to users: everything but its secret, the condition parsed."""

    condition: Condition
    cooldown: timedelta


def new_rule_id() -> str:
    return f"alr_{uuid.uuid4().hex[:24]}"


_STORED_AS_IS = tuple(f.name for f in fields(RuleRecord))
"""Fields a rule and its stored row share; the condition and cooldown are converted."""


def rule_from_row(row: RuleRow) -> AlertRule:
    return AlertRule(
        condition=Condition.from_json(row.condition_json),
        cooldown=timedelta(seconds=row.cooldown_s),
        **{name: getattr(row, name) for name in _STORED_AS_IS},
    )


def rule_to_row(rule: AlertRule) -> RuleRow:
    return RuleRow(
        kind=str(rule.condition.kind),
        condition_json=rule.condition.to_json(),
        cooldown_s=rule.cooldown.total_seconds(),
        **{name: getattr(rule, name) for name in _STORED_AS_IS},
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


def _check_index(condition: Condition, catalog: Catalog) -> None:
    _absent(condition, "below_price_per_gpu_hour", "below_cost_usd", "workload")
    if not condition.scope.gpu:
        raise InvalidAlertError("gpu", "is required for an index alert")
    try:
        condition.scope.check_honoured(INDEX_SCOPE & ALERT_SCOPE, "an index alert")
        one_gpu(condition.scope, catalog)
    except PipelineError as exc:
        raise InvalidAlertError("scope", str(exc)) from None
    change = condition.index_change_percent
    if change is None or not math.isfinite(change) or change == 0:
        raise InvalidAlertError("index_change_percent", "is required: e.g. -10 for a 10% drop")
    if not -100 < change <= MAX_INDEX_CHANGE_PERCENT:
        raise InvalidAlertError(
            "index_change_percent", f"must be above -100 and at most {MAX_INDEX_CHANGE_PERCENT:g}"
        )
    if condition.within is None or not timedelta(hours=1) <= condition.within <= MAX_WITHIN:
        raise InvalidAlertError("within", f"must be between 1h and {MAX_WITHIN.days} days")


HEALTH_SCOPE = frozenset({"providers"})


def _check_condition(condition: Condition, catalog: Catalog) -> None:
    scope = condition.scope
    scope.check_honoured(ALERT_SCOPE, "an alert")
    resolve(scope, catalog)  # unknown GPU, provider or place raise
    if condition.kind is AlertKind.PROVIDER_HEALTH:
        _absent(condition, "below_price_per_gpu_hour", "below_cost_usd", "workload",
                "index_change_percent", "within")  # fmt: skip
        try:
            scope.check_honoured(HEALTH_SCOPE, "a provider-health alert")
        except PipelineError as exc:
            raise InvalidAlertError("scope", str(exc)) from None
        return
    if condition.kind is AlertKind.INDEX:
        _check_index(condition, catalog)
        return
    _absent(condition, "index_change_percent", "within")
    if condition.kind is AlertKind.WORKLOAD:
        _absent(condition, "below_price_per_gpu_hour")
        if scope.min_gpu_count is not None:
            raise InvalidAlertError("min_gpu_count", "does not apply to a workload alert")
        _positive("below_cost_usd", condition.below_cost_usd)
        if condition.workload is None:
            raise InvalidAlertError("workload", "is required for a workload alert")
        quote_request(condition)  # raises on a workload that cannot be quoted
        return
    if not scope.gpu:
        raise InvalidAlertError("gpu", f"is required for a {condition.kind} alert")
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
