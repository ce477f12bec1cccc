"""Webhook events: the JSON body of each, and the outbox row that carries it.

A body is fixed when the event is stored; every attempt sends the same bytes with the same
`webhook-id` (the delivery id), only `webhook-timestamp` and the signature change.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

import orjson

from pipeline.alerts.condition import ALERT_SCOPE, AlertKind
from pipeline.alerts.rules import AlertRule
from warehouse.alerts import DeliveryRow

__all__ = [
    "EVENT_TYPES",
    "TEST_EVENT",
    "EventType",
    "event_body",
    "new_delivery",
    "offer_summary",
    "rule_summary",
]

EventType = Literal[
    "price.below",
    "gpu.available",
    "workload.below",
    "index.moved",
    "provider.degraded",
    "provider.recovered",
    "alert.test",
]
EVENT_TYPES: Mapping[AlertKind, EventType] = {
    AlertKind.PRICE: "price.below",
    AlertKind.AVAILABILITY: "gpu.available",
    AlertKind.WORKLOAD: "workload.below",
    AlertKind.INDEX: "index.moved",
}
TEST_EVENT: EventType = "alert.test"
_OFFER_FIELDS = (
    "provider",
    "offer_id",
    "gpu",
    "gpu_raw",
    "form_factor",
    "gpu_count",
    "vram_gb",
    "pricing",
    "price_per_hour",
    "price_per_gpu_hour",
    "region",
    "country",
    "eea",
    "available",
    "observed_at",
)


def rule_summary(rule: AlertRule) -> dict[str, Any]:
    """The rule as events show it: no URL, no secret."""
    c = rule.condition
    return {
        "id": rule.rule_id,
        "kind": str(c.kind),
        **c.scope.model_dump(mode="json", include=set(ALERT_SCOPE)),
        "below_price_per_gpu_hour": c.below_price_per_gpu_hour,
        "below_cost_usd": c.below_cost_usd,
        "band": rule.band,
        "cooldown_seconds": rule.cooldown.total_seconds(),
        **(
            {
                "index_change_percent": c.index_change_percent,
                "within_seconds": c.within.total_seconds() if c.within is not None else None,
            }
            if c.kind is AlertKind.INDEX
            else {}
        ),
    }


def offer_summary(offer: Mapping[str, Any], stale: bool) -> dict[str, Any]:
    return {**{name: offer.get(name) for name in _OFFER_FIELDS}, "stale": stale}


def event_body(event_type: EventType, timestamp: datetime, data: Mapping[str, Any]) -> str:
    """`{"type", "timestamp", "data"}` as compact JSON, times in UTC with `Z`."""
    payload = {"type": event_type, "timestamp": timestamp, "data": dict(data)}
    return orjson.dumps(payload, option=orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS).decode()


def new_delivery(rule_id: str, event_type: EventType, body: str, now: datetime) -> DeliveryRow:
    """An outbox row, due at once."""
    return DeliveryRow(
        delivery_id=f"msg_{uuid.uuid4().hex}",
        rule_id=rule_id,
        event_type=event_type,
        body=body,
        status="pending",
        attempts=0,
        created_at=now,
        next_attempt_at=now,
    )
