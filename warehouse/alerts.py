"""Alert rules, their edge state and the webhook outbox, as named functions over a cursor.

Writes are meant to run inside `Warehouse.transaction()`; its write lock makes a claim (select
due deliveries, then push their `next_attempt_at` forward as a lease) atomic within a process.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TypeVar

import duckdb

from warehouse.db import insert_row

__all__ = [
    "AttemptRow",
    "DeliveryRow",
    "RuleRecord",
    "RuleRow",
    "StateRow",
    "attempts_for_rule",
    "claim_delivery",
    "claim_due_deliveries",
    "count_sent_since",
    "delete_rule",
    "deliveries_for_rule",
    "disable_rule",
    "get_delivery",
    "get_rule",
    "insert_delivery",
    "insert_rule",
    "list_rules",
    "record_attempt",
    "rule_states",
    "save_state",
    "set_evaluation_error",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleRecord:
    """What a rule holds alike as stored (`RuleRow`) and as shown (`pipeline.alerts.AlertRule`);
    they differ in how they hold the condition and the cooldown."""

    rule_id: str
    url: str
    secret: str = field(default="", repr=False, compare=False)
    """Only for signing; never shown after creation, never logged."""
    band: float
    created_at: datetime
    disabled_at: datetime | None = None
    disabled_reason: str | None = None
    evaluation_error: str | None = None
    """Why the last evaluation failed (the other rules went on); None once one succeeds."""
    evaluation_error_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleRow(RuleRecord):
    kind: str
    condition_json: str
    cooldown_s: float


@dataclass(frozen=True, slots=True)
class StateRow:
    rule_id: str
    armed: bool
    last_value: float | None
    places_json: str | None
    last_fired_at: datetime | None
    evaluated_at: datetime


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    delivery_id: str
    rule_id: str
    event_type: str
    body: str
    status: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None
    finished_at: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class AttemptRow:
    delivery_id: str
    rule_id: str
    attempt: int
    attempted_at: datetime
    status_code: int | None
    latency_ms: float
    outcome: str
    error: str | None


Row = TypeVar("Row", RuleRow, StateRow, DeliveryRow, AttemptRow)


def _rows(cursor: duckdb.DuckDBPyConnection, kind: type[Row]) -> list[Row]:
    names = {f.name for f in fields(kind)}
    columns = [d[0] for d in cursor.description]
    if set(columns) != names:
        raise RuntimeError(f"{kind.__name__} columns {sorted(columns)} != {sorted(names)}")
    return [kind(**dict(zip(columns, row, strict=True))) for row in cursor.fetchall()]


def insert_rule(conn: duckdb.DuckDBPyConnection, rule: RuleRow) -> None:
    insert_row(conn, "alert_rules", rule)


def list_rules(
    conn: duckdb.DuckDBPyConnection,
    *,
    enabled_only: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> list[RuleRow]:
    """Rules, oldest first; `limit` and `offset` page through them."""
    where = "WHERE disabled_at IS NULL" if enabled_only else ""
    page = "LIMIT ? OFFSET ?" if limit is not None else ""
    cursor = conn.execute(
        f"SELECT * FROM alert_rules {where} ORDER BY created_at, rule_id {page}",
        [limit, offset] if limit is not None else [],
    )
    return _rows(cursor, RuleRow)


def count_rules(conn: duckdb.DuckDBPyConnection) -> int:
    row = conn.execute("SELECT count(*) FROM alert_rules").fetchone()
    return int(row[0]) if row else 0


def get_rule(conn: duckdb.DuckDBPyConnection, rule_id: str) -> RuleRow | None:
    cursor = conn.execute("SELECT * FROM alert_rules WHERE rule_id = ?", [rule_id])
    found = _rows(cursor, RuleRow)
    return found[0] if found else None


def _cancel_pending(
    conn: duckdb.DuckDBPyConnection, rule_id: str, now: datetime, reason: str
) -> None:
    conn.execute(
        """
        UPDATE alert_deliveries
        SET status = 'cancelled', next_attempt_at = NULL, finished_at = ?, last_error = ?
        WHERE rule_id = ? AND status = 'pending'
        """,
        [now, reason, rule_id],
    )


def delete_rule(conn: duckdb.DuckDBPyConnection, rule_id: str, now: datetime) -> bool:
    """Remove a rule and its state; its pending deliveries are cancelled, its log is kept."""
    row = conn.execute("DELETE FROM alert_rules WHERE rule_id = ?", [rule_id]).fetchone()
    if not row or not row[0]:
        return False
    conn.execute("DELETE FROM alert_state WHERE rule_id = ?", [rule_id])
    _cancel_pending(conn, rule_id, now, "alert deleted")
    return True


def disable_rule(conn: duckdb.DuckDBPyConnection, rule_id: str, now: datetime, reason: str) -> None:
    """Stop evaluating and sending for a rule (its endpoint said 410 Gone)."""
    conn.execute(
        "UPDATE alert_rules SET disabled_at = ?, disabled_reason = ? WHERE rule_id = ?",
        [now, reason, rule_id],
    )
    _cancel_pending(conn, rule_id, now, reason)


def set_evaluation_error(
    conn: duckdb.DuckDBPyConnection, rule_id: str, error: str | None, at: datetime | None
) -> None:
    """Mark a rule's last evaluation as failed with `error`, or (None) as fine again."""
    conn.execute(
        "UPDATE alert_rules SET evaluation_error = ?, evaluation_error_at = ? WHERE rule_id = ?",
        [error, at, rule_id],
    )


def rule_states(conn: duckdb.DuckDBPyConnection) -> dict[str, StateRow]:
    cursor = conn.execute("SELECT * FROM alert_state")
    return {state.rule_id: state for state in _rows(cursor, StateRow)}


def save_state(conn: duckdb.DuckDBPyConnection, state: StateRow) -> None:
    conn.execute("DELETE FROM alert_state WHERE rule_id = ?", [state.rule_id])
    insert_row(conn, "alert_state", state)


def insert_delivery(conn: duckdb.DuckDBPyConnection, delivery: DeliveryRow) -> None:
    insert_row(conn, "alert_deliveries", delivery)


def count_sent_since(
    conn: duckdb.DuckDBPyConnection, rule_id: str, since: datetime, excluded_type: str
) -> int:
    """A rule's stored events created at or after `since` that were not cancelled, leaving out
    those of `excluded_type` (test events): what its delivery rate limit counts."""
    row = conn.execute(
        """
        SELECT count(*) FROM alert_deliveries
        WHERE rule_id = ? AND created_at >= ? AND status <> 'cancelled' AND event_type <> ?
        """,
        [rule_id, since, excluded_type],
    ).fetchone()
    return int(row[0]) if row else 0


def get_delivery(conn: duckdb.DuckDBPyConnection, delivery_id: str) -> DeliveryRow | None:
    cursor = conn.execute("SELECT * FROM alert_deliveries WHERE delivery_id = ?", [delivery_id])
    found = _rows(cursor, DeliveryRow)
    return found[0] if found else None


def _lease(conn: duckdb.DuckDBPyConnection, ids: list[str], until: datetime) -> None:
    conn.execute(
        "UPDATE alert_deliveries SET next_attempt_at = ? WHERE delivery_id IN (SELECT unnest(?))",
        [until, ids],
    )


def claim_due_deliveries(
    conn: duckdb.DuckDBPyConnection, now: datetime, lease_until: datetime, limit: int
) -> list[DeliveryRow]:
    """Pending deliveries of enabled rules due by `now`, oldest first, leased to the caller."""
    cursor = conn.execute(
        """
        SELECT d.* FROM alert_deliveries d
        JOIN alert_rules r USING (rule_id)
        WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND r.disabled_at IS NULL
        ORDER BY d.next_attempt_at, d.created_at, d.delivery_id
        LIMIT ?
        """,
        [now, limit],
    )
    due = _rows(cursor, DeliveryRow)
    if due:
        _lease(conn, [d.delivery_id for d in due], lease_until)
    return due


def claim_delivery(
    conn: duckdb.DuckDBPyConnection, delivery_id: str, now: datetime, lease_until: datetime
) -> DeliveryRow | None:
    """One pending delivery if it is due by `now` (no other sender holds it), leased."""
    cursor = conn.execute(
        """
        SELECT * FROM alert_deliveries
        WHERE delivery_id = ? AND status = 'pending' AND next_attempt_at <= ?
        """,
        [delivery_id, now],
    )
    found = _rows(cursor, DeliveryRow)
    if found:
        _lease(conn, [delivery_id], lease_until)
    return found[0] if found else None


def record_attempt(
    conn: duckdb.DuckDBPyConnection,
    attempt: AttemptRow,
    *,
    status: str,
    next_attempt_at: datetime | None,
    finished_at: datetime | None,
) -> None:
    """Log one attempt and move its delivery on (to a retry time, or to a final state)."""
    insert_row(conn, "alert_attempts", attempt, AttemptRow)
    conn.execute(
        """
        UPDATE alert_deliveries
        SET status = ?, attempts = ?, next_attempt_at = ?, finished_at = ?, last_error = ?
        WHERE delivery_id = ?
        """,
        [status, attempt.attempt, next_attempt_at, finished_at, attempt.error, attempt.delivery_id],
    )


def deliveries_for_rule(
    conn: duckdb.DuckDBPyConnection, rule_id: str, limit: int = 100
) -> list[DeliveryRow]:
    """A rule's deliveries, newest first."""
    cursor = conn.execute(
        """
        SELECT * FROM alert_deliveries WHERE rule_id = ?
        ORDER BY created_at DESC, delivery_id LIMIT ?
        """,
        [rule_id, limit],
    )
    return _rows(cursor, DeliveryRow)


def attempts_for_rule(
    conn: duckdb.DuckDBPyConnection, rule_id: str, delivery_ids: list[str]
) -> list[AttemptRow]:
    """Every attempt of the given deliveries of a rule, in the order they were made."""
    cursor = conn.execute(
        """
        SELECT * FROM alert_attempts
        WHERE rule_id = ? AND delivery_id IN (SELECT unnest(?))
        ORDER BY delivery_id, attempt
        """,
        [rule_id, delivery_ids],
    )
    return _rows(cursor, AttemptRow)
