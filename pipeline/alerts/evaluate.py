"""Rule evaluation after a collection: edge-triggered, with a hysteresis band and a cooldown.

Each enabled rule is observed on the stored snapshots (each provider's latest successful run,
so never a half-written one), then `decide` compares that with the rule's state:

- price and workload rules fire when the value is at or below the threshold while armed, and
  re-arm only once the value rose above threshold + band (or no offer matched at all);
- availability rules fire when the GPU is available at a place (provider/region) not seen
  available at the previous evaluation;
- within `cooldown` of the last fire a rule does not fire; the event is kept for later (it fires
  at the first evaluation after the cooldown if the condition still holds), never repeated;
- whatever the data, a rule sends at most `MAX_DELIVERIES_PER_RULE_PER_HOUR` events in any
  `RATE_WINDOW`, counted from its stored deliveries (test events aside); an event past the limit
  is stored `cancelled` with the reason, so the delivery log shows it, and never sent.

A new rule has no state, so a condition that already holds fires at its first evaluation. New
states and events are written in one transaction; evaluations never overlap (in one process,
nor across a lake's collectors: `EVALUATION_LOCK`).

Each rule is evaluated on its own: one that fails (a stored filter of the wrong type, say) is
logged and marked with its error (`evaluation_error`, shown by `GET /alerts/{id}`), keeps its
state, and the others go on; the mark is cleared by its next evaluation that succeeds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import orjson

from pipeline.alerts.events import (
    EVENT_TYPES,
    TEST_EVENT,
    event_body,
    new_delivery,
    offer_summary,
)
from pipeline.alerts.events import rule_summary as _rule_summary
from pipeline.alerts.health import evaluate_health
from pipeline.alerts.rules import AlertKind, AlertRule, rule_from_row
from pipeline.alerts.snapshot import OfferSnapshot
from pipeline.catalog import Catalog, get_catalog
from pipeline.errors import PipelineError
from pipeline.market.freshness import provider_freshness
from pipeline.market.index import index_change
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.settings import Settings
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = [
    "MAX_DELIVERIES_PER_RULE_PER_HOUR",
    "RATE_WINDOW",
    "Decision",
    "Observation",
    "decide",
    "evaluate_alerts",
    "observe",
]

logger = logging.getLogger(__name__)
OffersSource = Callable[[OfferQuery], list[dict[str, Any]]]
"""Current offers for a question (`OfferSnapshot.offers`, or one query each)."""

MAX_OFFERS_IN_EVENT = 5
ERROR_CHARS = 500
"""Longest evaluation error stored with a rule."""
MAX_DELIVERIES_PER_RULE_PER_HOUR = 12
"""Most events one rule sends in any `RATE_WINDOW`, whatever its condition or cooldown."""
RATE_WINDOW = timedelta(hours=1)
_EVALUATION = threading.Lock()
"""One evaluation at a time per process (the scheduler runs providers in parallel)."""


@dataclass(frozen=True, slots=True)
class Observation:
    value: float | None
    """Lowest price per GPU-hour, best total cost, or the number of places available."""
    offers: list[dict[str, Any]] = field(default_factory=list)
    """Matching offers, cheapest first."""
    places: frozenset[str] = frozenset()
    """Availability: `provider/region` of each place the GPU is available at."""
    quote: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    """Index rules: the latest hourly value, the one `within` before, and the change in %."""


@dataclass(frozen=True, slots=True)
class Decision:
    state: wa.StateRow
    fire: bool
    new_places: tuple[str, ...] = ()


def _place(offer: Mapping[str, Any]) -> str:
    return f"{offer['provider']}/{offer.get('region') or '-'}"


def observe(
    warehouse: Warehouse,
    rule: AlertRule,
    catalog: Catalog,
    now: datetime,
    offers: OffersSource | None = None,
) -> Observation:
    """What the stored data says now about the rule's condition (current offers from `offers`,
    e.g. one `OfferSnapshot` for every rule, else one query)."""
    c = rule.condition
    fetch = offers or (lambda query: current_offers(warehouse, query, catalog))
    if c.kind is AlertKind.INDEX:
        assert c.within is not None, "validated index rules have a look-back"
        moved = index_change(warehouse, c.scope, c.within, now)
        return Observation(moved["change_percent"] if moved else None, index=moved)
    if c.kind is AlertKind.WORKLOAD:
        from pipeline.alerts.workloads import best_quote

        quote = best_quote(warehouse, c, catalog, offers=fetch)
        if quote is None:
            return Observation(None)
        summary = {
            "gpus": quote.gpus,
            "hours": quote.hours,
            "cost_usd": quote.cost_usd,
            "cost_range_usd": list(quote.cost_range_usd),
        }
        return Observation(quote.cost_usd, [dict(quote.offer)], quote=summary)
    found = fetch(OfferQuery.model_validate(c.scope.model_dump()))
    if c.kind is AlertKind.AVAILABILITY:
        places = frozenset(_place(o) for o in found)
        return Observation(float(len(places)), found, places)
    return Observation(found[0]["price_per_gpu_hour"] if found else None, found)


def _cooling(rule: AlertRule, state: wa.StateRow | None, now: datetime) -> bool:
    last = state.last_fired_at if state else None
    return last is not None and now - last < rule.cooldown


def decide(
    rule: AlertRule, state: wa.StateRow | None, seen: Observation, now: datetime
) -> Decision:
    """Whether the rule fires now, and its next state (pure)."""
    cooling = _cooling(rule, state, now)
    last_fired = state.last_fired_at if state else None
    if rule.condition.kind is AlertKind.AVAILABILITY:
        known = (
            frozenset(orjson.loads(state.places_json))
            if state and state.places_json
            else (frozenset())
        )
        new = seen.places - known
        fire = bool(new) and not cooling
        keep = seen.places if fire else known & seen.places
        next_state = wa.StateRow(
            rule.rule_id,
            True,
            seen.value,
            orjson.dumps(sorted(keep)).decode(),
            now if fire else last_fired,
            now,
        )
        return Decision(next_state, fire, tuple(sorted(new)) if fire else ())
    threshold = rule.condition.threshold
    assert threshold is not None, "validated rules of this kind have a threshold"
    armed = state.armed if state else True
    if rule.condition.kind is AlertKind.INDEX:  # a move: down to -x% or up to +x%
        holds = seen.value is not None and (
            seen.value <= threshold if threshold < 0 else seen.value >= threshold
        )
        armed = armed or (seen.value is not None and not holds)
        fire = holds and armed and not cooling
        next_state = wa.StateRow(
            rule.rule_id, armed and not fire, seen.value, None, now if fire else last_fired, now
        )
        return Decision(next_state, fire)
    if not armed and (seen.value is None or seen.value > threshold + rule.band):
        armed = True
    holds = seen.value is not None and seen.value <= threshold
    fire = holds and armed and not cooling
    next_state = wa.StateRow(
        rule.rule_id, armed and not fire, seen.value, None, now if fire else last_fired, now
    )
    return Decision(next_state, fire)


def _event_data(
    rule: AlertRule,
    state: wa.StateRow | None,
    seen: Observation,
    decision: Decision,
    stale: Mapping[str, bool],
) -> dict[str, Any]:
    offers = seen.offers
    threshold = rule.condition.threshold
    if decision.new_places:
        cheapest: dict[str, dict[str, Any]] = {}
        for offer in offers:
            if _place(offer) in decision.new_places:
                cheapest.setdefault(_place(offer), offer)
        offers = list(cheapest.values())
    elif rule.condition.kind is AlertKind.PRICE and threshold is not None:
        offers = [o for o in offers if o["price_per_gpu_hour"] <= threshold]
    shown = [offer_summary(o, stale.get(o["provider"], True)) for o in offers[:MAX_OFFERS_IN_EVENT]]
    data: dict[str, Any] = {
        "rule": _rule_summary(rule),
        "value": seen.value,
        "previous_value": state.last_value if state else None,
        "threshold": threshold,
        "offer": shown[0] if shown else None,
        "offers": shown,
        "observed_at": max((o["observed_at"] for o in shown), default=None),
        "stale": any(o["stale"] for o in shown),
    }
    if decision.new_places:
        data["places"] = list(decision.new_places)
    if seen.quote is not None:
        data["quote"] = seen.quote
    if seen.index is not None:
        data["index"] = seen.index
        data["observed_at"] = seen.index["t"]
    return data


EVALUATION_LOCK = "gpuprices:alerts-evaluate"
RATE_LIMITED = (
    f"rate limit: at most {MAX_DELIVERIES_PER_RULE_PER_HOUR} events per rule per "
    f"{RATE_WINDOW.total_seconds() / 3600:g} h"
)


def _rate_limited(delivery: wa.DeliveryRow, now: datetime) -> wa.DeliveryRow:
    """The event as stored when its rule is over the limit: cancelled, with the reason."""
    return replace(
        delivery, status="cancelled", next_attempt_at=None, finished_at=now, last_error=RATE_LIMITED
    )


def _evaluate_rule(
    row: wa.RuleRow,
    state: wa.StateRow | None,
    warehouse: Warehouse,
    catalog: Catalog,
    stale: Mapping[str, bool],
    now: datetime,
    snapshot: OfferSnapshot,
) -> tuple[wa.StateRow, list[wa.DeliveryRow]]:
    """The rule's next state, and its events if it fires now."""
    rule = rule_from_row(row)
    if rule.condition.kind is AlertKind.PROVIDER_HEALTH:
        return evaluate_health(rule, state, warehouse, now)
    seen = observe(warehouse, rule, catalog, now, snapshot.offers)
    decision = decide(rule, state, seen, now)
    if not decision.fire:
        return decision.state, []
    event_type = EVENT_TYPES[rule.condition.kind]
    body = event_body(event_type, now, _event_data(rule, state, seen, decision, stale))
    return decision.state, [new_delivery(rule.rule_id, event_type, body, now)]


def evaluate_alerts(
    warehouse: Warehouse, settings: Settings, now: datetime, catalog: Catalog | None = None
) -> list[str]:
    """Evaluate every enabled rule on the stored data; store the events; return their ids."""
    cat = catalog or get_catalog()
    # one evaluation at a time in this process and, on a lake, in the whole cluster
    with _EVALUATION, warehouse.exclusive(EVALUATION_LOCK):
        with warehouse.cursor() as cur:
            rows = wa.list_rules(cur, enabled_only=True)
            states = wa.rule_states(cur)
        if not rows:
            return []
        stale = {f.provider: f.stale for f in provider_freshness(warehouse, settings, now)}
        decisions: list[tuple[wa.StateRow, list[wa.DeliveryRow]]] = []
        errors: dict[str, str | None] = {}
        snapshot = OfferSnapshot(warehouse, cat)  # every rule asks the same offers, read once
        for row in rows:
            try:
                decisions.append(
                    _evaluate_rule(
                        row, states.get(row.rule_id), warehouse, cat, stale, now, snapshot
                    )
                )
            except PipelineError as exc:
                logger.warning("alert %s not evaluated: %s", row.rule_id, exc)
                errors[row.rule_id] = str(exc)[:ERROR_CHARS]
            except Exception as exc:  # the per-rule edge: one broken rule must not stop the rest
                logger.exception("alert %s not evaluated", row.rule_id)
                errors[row.rule_id] = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
            else:
                if row.evaluation_error is not None:
                    errors[row.rule_id] = None  # fine again
        with warehouse.transaction() as conn:
            live = {row.rule_id for row in wa.list_rules(conn, enabled_only=True)}
            kept: list[tuple[wa.StateRow, list[wa.DeliveryRow]]] = []
            for next_state, deliveries in decisions:
                if next_state.rule_id not in live:
                    continue  # deleted or disabled while we looked
                wa.save_state(conn, next_state)
                sent = wa.count_sent_since(conn, next_state.rule_id, now - RATE_WINDOW, TEST_EVENT)
                allowed = max(0, MAX_DELIVERIES_PER_RULE_PER_HOUR - sent)
                for delivery in deliveries[allowed:]:
                    logger.warning(
                        "alert %s event %s not sent: rate limit",
                        delivery.rule_id,
                        delivery.event_type,
                    )
                    wa.insert_delivery(conn, _rate_limited(delivery, now))
                for delivery in deliveries[:allowed]:
                    wa.insert_delivery(conn, delivery)
                kept.append((next_state, deliveries[:allowed]))
            for rule_id, error in errors.items():
                wa.set_evaluation_error(conn, rule_id, error, now if error is not None else None)
    fired = [d for _, deliveries in kept for d in deliveries]
    for delivery in fired:
        logger.info(
            "alert fired rule=%s event=%s delivery=%s",
            delivery.rule_id,
            delivery.event_type,
            delivery.delivery_id,
        )
    return [d.delivery_id for d in fired]
