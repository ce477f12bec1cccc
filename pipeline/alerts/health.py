"""Provider-health rules: one `provider.degraded` event when a watched provider's newest run is
degraded and was not announced yet, one `provider.recovered` when an announced provider's newest
run is clean (ok and not degraded). The rule's state keeps the providers announced degraded (the
open episodes), so a degraded provider is announced once however many runs it stays degraded,
and a failing or not-configured run neither opens nor closes an episode."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from pipeline.alerts.events import event_body, new_delivery
from pipeline.alerts.events import rule_summary as _rule_summary
from pipeline.alerts.rules import AlertRule
from pipeline.market.quality import provider_health
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = ["evaluate_health"]

_EVENT_FIELDS = ("run_id", "observed_at", "health", "reasons", "resolved_share", "unknown_names",
                 "fields_added", "fields_missing", "reject_count", "offer_count")  # fmt: skip


def evaluate_health(
    rule: AlertRule, state: wa.StateRow | None, warehouse: Warehouse, now: datetime
) -> tuple[wa.StateRow, list[wa.DeliveryRow]]:
    """The rule's next state and its events (one per provider whose episode opened or closed)."""
    watched = set(rule.condition.scope.providers or ())
    runs = {p: run for p, run in provider_health(warehouse).items() if not watched or p in watched}
    announced = frozenset(orjson.loads(state.places_json)) if state and state.places_json else set()
    degraded = {p for p, run in runs.items() if run["health"] == "degraded"}
    clean = {p for p, run in runs.items() if run["health"] == "ok"}
    deliveries = []
    for provider, event in sorted(
        [(p, "provider.degraded") for p in degraded - announced]
        + [(p, "provider.recovered") for p in announced & clean]
    ):
        data: dict[str, Any] = {
            "rule": _rule_summary(rule),
            "provider": provider,
            **{k: runs[provider][k] for k in _EVENT_FIELDS},
        }
        body = event_body(event, now, data)  # type: ignore[arg-type]
        deliveries.append(new_delivery(rule.rule_id, event, body, now))  # type: ignore[arg-type]
    still = sorted((announced - clean) | degraded)
    next_state = wa.StateRow(
        rule.rule_id,
        True,
        float(len(still)),
        orjson.dumps(still).decode(),
        now if deliveries else (state.last_fired_at if state else None),
        now,
    )
    return next_state, deliveries
