"""Provider-health rules: one `provider.degraded` event when a watched provider's newest run is
degraded and no episode is open for it, one `provider.recovered` once an open episode's provider
had `RECOVERY_CLEAN_RUNS` clean runs (ok and not degraded) in a row.

Hysteresis, so an answer that alternates between a good and a bad shape cannot flap:
- an episode closes only after `RECOVERY_CLEAN_RUNS` distinct clean runs in a row; any other run
  (degraded, failed, not configured) in between starts the count again;
- a provider whose episode closed is not announced degraded again until `MIN_REOPEN_AFTER` (or
  the rule's cooldown, if longer) has passed since it closed; a run still degraded after that
  opens a new episode.

The rule's state (`places_json`) keeps the open episodes (their clean-run count and the last run
counted, so re-evaluating the same run after another provider's collection does not count it
twice) and when each recent episode closed. A degraded provider is announced once however many
runs it stays degraded. Every event also passes the per-rule delivery rate limit
(`pipeline.alerts.evaluate.MAX_DELIVERIES_PER_RULE_PER_HOUR`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import orjson

from pipeline.alerts.events import EventType, event_body, new_delivery
from pipeline.alerts.events import rule_summary as _rule_summary
from pipeline.alerts.rules import AlertRule
from pipeline.market.quality import provider_health
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = ["MIN_REOPEN_AFTER", "RECOVERY_CLEAN_RUNS", "evaluate_health"]

RECOVERY_CLEAN_RUNS = 2
"""Clean runs in a row that end an episode (one clean run between two bad ones does not)."""
MIN_REOPEN_AFTER = timedelta(hours=1)
"""Shortest time between an episode's end and the next `provider.degraded` for that provider."""

_EVENT_FIELDS = ("run_id", "observed_at", "health", "reasons", "resolved_share", "unknown_names",
                 "fields_added", "fields_missing", "reject_count", "offer_count")  # fmt: skip


def _load(state: wa.StateRow | None) -> tuple[dict[str, dict[str, Any]], dict[str, datetime]]:
    """Open episodes `{provider: {"clean_runs", "run_id"}}` and `{provider: closed_at}`."""
    if state is None or not state.places_json:
        return {}, {}
    stored = orjson.loads(state.places_json)
    if isinstance(stored, list):  # before hysteresis: the providers announced degraded
        return {p: {"clean_runs": 0, "run_id": None} for p in stored}, {}
    closed = {p: datetime.fromisoformat(at) for p, at in stored.get("closed", {}).items()}
    return dict(stored.get("open", {})), closed


def evaluate_health(
    rule: AlertRule, state: wa.StateRow | None, warehouse: Warehouse, now: datetime
) -> tuple[wa.StateRow, list[wa.DeliveryRow]]:
    """The rule's next state and its events (one per provider whose episode opened or closed)."""
    watched = set(rule.condition.scope.providers or ())
    runs = {p: run for p, run in provider_health(warehouse).items() if not watched or p in watched}
    episodes, closed = _load(state)
    reopen_after = max(MIN_REOPEN_AFTER, rule.cooldown)
    closed = {p: at for p, at in closed.items() if now - at < reopen_after}
    events: list[tuple[str, EventType]] = []
    for provider, run in sorted(runs.items()):
        health = run["health"]
        episode = episodes.get(provider)
        if episode is None:
            if health == "degraded" and provider not in closed:
                episodes[provider] = {"clean_runs": 0, "run_id": run["run_id"]}
                events.append((provider, "provider.degraded"))
            continue
        if episode["run_id"] == run["run_id"]:
            continue  # this run was counted already
        clean_runs = episode["clean_runs"] + 1 if health == "ok" else 0
        if clean_runs >= RECOVERY_CLEAN_RUNS:
            del episodes[provider]
            closed[provider] = now
            events.append((provider, "provider.recovered"))
        else:
            episodes[provider] = {"clean_runs": clean_runs, "run_id": run["run_id"]}
    deliveries = []
    for provider, event in events:
        data: dict[str, Any] = {
            "rule": _rule_summary(rule),
            "provider": provider,
            **{k: runs[provider][k] for k in _EVENT_FIELDS},
        }
        body = event_body(event, now, data)
        deliveries.append(new_delivery(rule.rule_id, event, body, now))
    stored = {
        "open": dict(sorted(episodes.items())),
        "closed": {p: at.isoformat() for p, at in sorted(closed.items())},
    }
    next_state = wa.StateRow(
        rule.rule_id,
        True,
        float(len(episodes)),
        orjson.dumps(stored).decode(),
        now if deliveries else (state.last_fired_at if state else None),
        now,
    )
    return next_state, deliveries
