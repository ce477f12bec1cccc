"""Alert management as the API and the CLI call it: create, list, show, delete, test, log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

import httpx

from pipeline.alerts.condition import AlertKind, Condition
from pipeline.alerts.delivery import WebhookSender
from pipeline.alerts.errors import AlertError, AlertNotFoundError, TooManyAlertsError
from pipeline.alerts.events import TEST_EVENT, event_body, new_delivery, rule_summary
from pipeline.alerts.rules import AlertRule, AlertSpec, new_rule_id, rule_from_row, rule_to_row
from pipeline.alerts.rules import validate_spec as _validate
from pipeline.alerts.signing import new_secret
from pipeline.alerts.targets import Resolver, resolve_host
from pipeline.base import utc_now
from pipeline.catalog import Catalog
from pipeline.settings import Settings
from scrapers.models import Pricing
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = [
    "AlertStatus",
    "CreatedAlert",
    "DeliveryLog",
    "alert_deliveries",
    "alerts_page",
    "create_alert",
    "delete_alert",
    "get_alert",
    "list_alerts",
    "send_test",
]


@dataclass(frozen=True, slots=True)
class CreatedAlert:
    rule: AlertRule
    secret: str = field(repr=False)
    """`whsec_...`: returned this once, to verify signatures with."""


@dataclass(frozen=True, slots=True)
class AlertStatus:
    rule: AlertRule
    state: wa.StateRow | None
    """None until the rule's first evaluation."""


@dataclass(frozen=True, slots=True)
class DeliveryLog:
    delivery: wa.DeliveryRow
    attempts: list[wa.AttemptRow]


def watched(condition: Condition) -> Condition:
    """A price rule without a pricing watches on-demand offers (a spot price is not the price one
    can count on); `pricing=spot` watches spot. Stored explicitly, so `list` shows it."""
    if condition.kind is AlertKind.PRICE and condition.scope.pricing is None:
        scope = condition.scope.model_copy(update={"pricing": Pricing.ON_DEMAND})
        return replace(condition, scope=scope)
    return condition


def create_alert(
    warehouse: Warehouse,
    spec: AlertSpec,
    settings: Settings,
    now: datetime,
    *,
    resolver: Resolver = resolve_host,
    catalog: Catalog | None = None,
) -> CreatedAlert:
    """Validate and store a rule with a fresh secret; it is evaluated after the next collection."""
    _validate(
        spec, allow_private=settings.allow_private_webhooks, resolver=resolver, catalog=catalog
    )
    secret = new_secret()
    rule = AlertRule(
        rule_id=new_rule_id(),
        url=spec.url,
        condition=watched(spec.condition),
        band=spec.band,
        cooldown=spec.cooldown,
        created_at=now,
        secret=secret,
    )
    with warehouse.transaction() as conn:
        if wa.count_rules(conn) >= settings.max_alert_rules:
            raise TooManyAlertsError(settings.max_alert_rules)
        wa.insert_rule(conn, rule_to_row(rule))
    return CreatedAlert(replace(rule, secret=""), secret)


def _public(row: wa.RuleRow) -> AlertRule:
    return replace(rule_from_row(row), secret="")


def list_alerts(warehouse: Warehouse) -> list[AlertStatus]:
    with warehouse.cursor() as cur:
        rows = wa.list_rules(cur)
        states = wa.rule_states(cur)
    return [AlertStatus(_public(row), states.get(row.rule_id)) for row in rows]


def alerts_page(warehouse: Warehouse, limit: int, offset: int = 0) -> tuple[list[AlertStatus], int]:
    """Rules `offset` to `offset + limit`, oldest first, and how many there are in all."""
    with warehouse.cursor() as cur:
        rows = wa.list_rules(cur, limit=limit, offset=offset)
        total = wa.count_rules(cur)
        states = wa.rule_states(cur)
    return [AlertStatus(_public(row), states.get(row.rule_id)) for row in rows], total


def get_alert(warehouse: Warehouse, rule_id: str) -> AlertStatus:
    with warehouse.cursor() as cur:
        row = wa.get_rule(cur, rule_id)
        states = wa.rule_states(cur) if row is not None else {}
    if row is None:
        raise AlertNotFoundError(rule_id)
    return AlertStatus(_public(row), states.get(rule_id))


def delete_alert(warehouse: Warehouse, rule_id: str, now: datetime) -> None:
    """Remove a rule; its pending deliveries are cancelled."""
    with warehouse.transaction() as conn:
        if not wa.delete_rule(conn, rule_id, now):
            raise AlertNotFoundError(rule_id)


def alert_deliveries(warehouse: Warehouse, rule_id: str, limit: int = 100) -> list[DeliveryLog]:
    """A rule's deliveries, newest first, each with every attempt (oldest first)."""
    with warehouse.cursor() as cur:
        if wa.get_rule(cur, rule_id) is None:
            raise AlertNotFoundError(rule_id)
        deliveries = wa.deliveries_for_rule(cur, rule_id, limit)
        attempts = wa.attempts_for_rule(cur, rule_id, [d.delivery_id for d in deliveries])
    by_delivery: dict[str, list[wa.AttemptRow]] = {}
    for attempt in attempts:
        by_delivery.setdefault(attempt.delivery_id, []).append(attempt)
    return [DeliveryLog(d, by_delivery.get(d.delivery_id, [])) for d in deliveries]


def send_test(
    warehouse: Warehouse,
    settings: Settings,
    rule_id: str,
    *,
    now: Callable[[], datetime] = utc_now,
    resolver: Resolver = resolve_host,
    transport: httpx.BaseTransport | None = None,
) -> DeliveryLog:
    """Store an `alert.test` event for the rule and make its first attempt now.

    Should that attempt fail, the event is retried like any other.
    """
    status = get_alert(warehouse, rule_id)
    if status.rule.disabled_at is not None:
        raise AlertError(
            f"Alert {rule_id} is disabled ({status.rule.disabled_reason}); create a new one"
        )
    at = now()
    body = event_body(
        TEST_EVENT,
        at,
        {"rule": rule_summary(status.rule), "message": "Test event from gpuprices"},
    )
    delivery = new_delivery(rule_id, TEST_EVENT, body, at)
    with warehouse.transaction() as conn:
        wa.insert_delivery(conn, delivery)
    WebhookSender(warehouse, settings, now=now, resolver=resolver, transport=transport).deliver(
        [delivery.delivery_id]
    )
    with warehouse.cursor() as cur:
        stored = wa.get_delivery(cur, delivery.delivery_id) or delivery
        attempts = wa.attempts_for_rule(cur, rule_id, [delivery.delivery_id])
    return DeliveryLog(stored, attempts)
