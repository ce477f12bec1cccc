"""Price, availability and workload-cost alerts, pushed as Standard Webhooks from an outbox.

`evaluate_alerts` runs after every collection and stores the events that fired;
`WebhookSender` / `deliver_due` send them (signed, retried, never to refused targets), and
`WebhookDispatcher` is `serve`'s pool of senders;
`service` holds what the API and CLI call to manage rules.
"""

from __future__ import annotations

from pipeline.alerts.delivery import AttemptResult, WebhookSender, deliver_due, retry_delay
from pipeline.alerts.dispatch import WebhookDispatcher
from pipeline.alerts.errors import (
    AlertError,
    AlertNotFoundError,
    InvalidAlertError,
    TargetError,
    UnresolvableTargetError,
    UnsafeTargetError,
)
from pipeline.alerts.evaluate import evaluate_alerts
from pipeline.alerts.rules import (
    ALERT_SCOPE,
    DEFAULT_BAND,
    DEFAULT_COOLDOWN,
    AlertKind,
    AlertRule,
    AlertSpec,
    Condition,
)
from pipeline.alerts.service import (
    AlertStatus,
    CreatedAlert,
    DeliveryLog,
    alert_deliveries,
    create_alert,
    delete_alert,
    get_alert,
    list_alerts,
    send_test,
)
from pipeline.alerts.targets import Resolver, check_target, resolve_host

__all__ = [
    "ALERT_SCOPE",
    "DEFAULT_BAND",
    "DEFAULT_COOLDOWN",
    "AlertError",
    "AlertKind",
    "AlertNotFoundError",
    "AlertRule",
    "AlertSpec",
    "AlertStatus",
    "AttemptResult",
    "Condition",
    "CreatedAlert",
    "DeliveryLog",
    "InvalidAlertError",
    "Resolver",
    "TargetError",
    "UnresolvableTargetError",
    "UnsafeTargetError",
    "WebhookDispatcher",
    "WebhookSender",
    "alert_deliveries",
    "check_target",
    "create_alert",
    "delete_alert",
    "deliver_due",
    "evaluate_alerts",
    "get_alert",
    "list_alerts",
    "resolve_host",
    "retry_delay",
    "send_test",
]
