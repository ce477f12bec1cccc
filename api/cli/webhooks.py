"""What the CLI prints of webhook deliveries, and what `collect` does for alerts after a run:
the first attempt of each event it fired, and one line per attempt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.cli.common import err, out
from api.rest.schemas_alerts import DeliveryOut
from pipeline.alerts import AttemptResult, WebhookSender
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["print_delivery", "print_webhook_results", "send_fired"]


def print_delivery(delivery: DeliveryOut) -> None:
    out.print(
        f"{delivery.id} {delivery.event_type}: [bold]{delivery.status}[/bold]"
        f" after {delivery.attempt_count} attempt(s)"
        + (
            f", next at {delivery.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC"
            if delivery.next_attempt_at
            else ""
        ),
        highlight=False,
        soft_wrap=True,
    )
    for a in delivery.attempts:
        code = a.status_code if a.status_code is not None else "-"
        out.print(
            f"  #{a.attempt} {a.attempted_at:%Y-%m-%d %H:%M:%S} UTC HTTP {code}"
            f" {a.latency_ms:.0f} ms {a.outcome}" + (f": {a.error}" if a.error else ""),
            highlight=False,
            soft_wrap=True,
        )


def send_fired(warehouse: Warehouse, settings: Settings, fired: list[str]) -> list[AttemptResult]:
    """The first attempt of each event a collection fired, side by side, each bounded by the
    webhook timeout; what fails stays pending for `serve` to retry."""
    return WebhookSender(warehouse, settings).deliver(fired) if fired else []


def print_webhook_results(results: list[AttemptResult]) -> None:
    for r in results:
        code = f" HTTP {r.status_code}" if r.status_code is not None else ""
        if r.outcome == "delivered":
            err.print(f"[green]webhook[/green] {r.delivery_id} for {r.rule_id}: delivered{code}")
            continue
        after = ""
        if r.next_attempt_at is not None:
            wait = max(r.next_attempt_at - datetime.now(UTC), timedelta(0))
            after = f"; `serve` retries in {wait.total_seconds():.0f} s"
        err.print(
            f"[yellow]webhook[/yellow] {r.delivery_id} for {r.rule_id}: {r.outcome}{code}"
            f" ({r.error}){after}",
            highlight=False,
            soft_wrap=True,
        )
