"""Sending stored events: one signed POST per attempt, retries with backoff, from the outbox.

An attempt claims its delivery first (its `next_attempt_at` is pushed past the attempt's longest
duration, a lease), so a delivery is never sent twice at once, and one whose sender died is taken
up again once the lease runs out: a restart resumes what was pending.

- 2xx: delivered. 410 Gone: failed, and the rule is disabled (its endpoint is gone).
- timeout, connection error, 408, 429, 5xx: retried after `webhook_backoff` × 2^(n-1), capped at
  `webhook_max_backoff`, with equal jitter (AWS Architecture Blog, "Exponential Backoff and
  Jitter"), and never sooner than `Retry-After`; `failed` after `webhook_max_attempts`.
- any other answer (3xx: redirects are not followed; 4xx): failed at once.
- a target refused at send time (its name now resolves to a private address, say): failed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Literal

import httpx

from pipeline.alerts.errors import UnresolvableTargetError, UnsafeTargetError
from pipeline.alerts.signing import signed_headers
from pipeline.alerts.targets import CheckedTarget, Resolver, check_target, resolve_host
from pipeline.base import utc_now
from pipeline.settings import Settings
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = ["AttemptResult", "Outcome", "WebhookSender", "deliver_due", "retry_delay"]

logger = logging.getLogger(__name__)

Outcome = Literal["delivered", "retry", "failed", "gone"]
RESPONSE_CAP_BYTES = 4096
"""Most of a receiver's answer ever read; the rest is left unread."""
ERROR_EXCERPT_CHARS = 200
MAX_DOUBLINGS = 30
"""Past this the cap has long taken over (and a timedelta would overflow)."""
MAX_RETRY_AFTER = timedelta(days=1)
"""A longer `Retry-After` is taken as this."""
LEASE_TIMEOUTS = 3
LEASE_MARGIN = timedelta(seconds=30)
"""A claim lasts 3 timeouts (connect, write, read) and a margin."""
MAX_PARALLEL_FIRST_ATTEMPTS = 8
DUE_BATCH = 100
USER_AGENT = "gpuprices-webhooks/0.1"
_STATUS: dict[Outcome, str] = {
    "delivered": "delivered",
    "retry": "pending",
    "failed": "failed",
    "gone": "failed",
}


@dataclass(frozen=True, slots=True)
class _Sent:
    outcome: Outcome
    status_code: int | None
    latency_ms: float
    error: str | None
    retry_after: timedelta | None = None


@dataclass(frozen=True, slots=True)
class AttemptResult:
    delivery_id: str
    rule_id: str
    attempt: int
    outcome: Outcome
    """`retry` means it stays pending until `next_attempt_at`."""
    status_code: int | None
    latency_ms: float
    error: str | None
    next_attempt_at: datetime | None


def retry_delay(
    attempt: int, settings: Settings, rng: Callable[[], float], retry_after: timedelta | None
) -> timedelta:
    """Wait after failed attempt number `attempt` (1-based)."""
    doublings = min(max(attempt - 1, 0), MAX_DOUBLINGS)
    backoff = min(settings.webhook_backoff * (1 << doublings), settings.webhook_max_backoff)
    jittered = backoff * (0.5 + rng() / 2)
    if retry_after is None:
        return jittered
    return max(jittered, min(retry_after, MAX_RETRY_AFTER))


def _retry_after(value: str | None, now: datetime) -> timedelta | None:
    """`Retry-After` as seconds or as an HTTP date (RFC 9110 §10.2.3); None if absent or bad."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return timedelta(seconds=int(text))
    try:
        at = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(at - now, timedelta(0)) if at.tzinfo is not None else None


def _classify(status: int) -> tuple[Outcome, str | None]:
    if 200 <= status < 300:
        return "delivered", None
    if status == 410:
        return "gone", "HTTP 410 Gone: endpoint disabled"
    if status in (408, 429) or status >= 500:
        return "retry", f"HTTP {status}"
    if 300 <= status < 400:
        return "failed", f"HTTP {status}: redirects are not followed"
    return "failed", f"HTTP {status}"


class WebhookSender:
    """Sends due deliveries of one warehouse under one set of settings."""

    def __init__(
        self,
        warehouse: Warehouse,
        settings: Settings,
        *,
        now: Callable[[], datetime] = utc_now,
        resolver: Resolver = resolve_host,
        transport: httpx.BaseTransport | None = None,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._warehouse = warehouse
        self._settings = settings
        self._now = now
        self._resolver = resolver
        self._transport = transport
        self._rng = rng

    @property
    def _lease(self) -> timedelta:
        return timedelta(seconds=self._settings.webhook_timeout_s * LEASE_TIMEOUTS) + LEASE_MARGIN

    def deliver_due(
        self, *, limit: int = DUE_BATCH, should_stop: Callable[[], bool] = lambda: False
    ) -> list[AttemptResult]:
        """Attempt every pending delivery that is due, one at a time, oldest first."""
        results: list[AttemptResult] = []
        while len(results) < limit and not should_stop():
            now = self._now()
            with self._warehouse.transaction() as conn:
                due = wa.claim_due_deliveries(conn, now, now + self._lease, limit=1)
            if not due:
                break
            results.append(self._attempt(due[0]))
        return results

    def deliver(self, delivery_ids: Sequence[str]) -> list[AttemptResult]:
        """Attempt these deliveries now, side by side (each bounded by the timeout)."""
        claimed: list[wa.DeliveryRow] = []
        for delivery_id in delivery_ids:
            now = self._now()
            with self._warehouse.transaction() as conn:
                row = wa.claim_delivery(conn, delivery_id, now, now + self._lease)
            if row is not None:
                claimed.append(row)
        if not claimed:
            return []
        workers = min(len(claimed), MAX_PARALLEL_FIRST_ATTEMPTS)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="webhook") as pool:
            return list(pool.map(self._attempt, claimed))

    def _attempt(self, delivery: wa.DeliveryRow) -> AttemptResult:
        with self._warehouse.cursor() as cur:
            rule = wa.get_rule(cur, delivery.rule_id)
        attempt = delivery.attempts + 1
        host = "-"
        if rule is None or rule.disabled_at is not None:
            sent = _Sent("failed", None, 0.0, "alert deleted or disabled")
        else:
            try:
                target = check_target(
                    rule.url,
                    allow_private=self._settings.allow_private_webhooks,
                    resolver=self._resolver,
                )
            except UnsafeTargetError as exc:
                sent = _Sent("failed", None, 0.0, f"target refused at send time: {exc}")
            except UnresolvableTargetError as exc:
                sent = _Sent("retry", None, 0.0, str(exc))
            else:
                host = target.url.host
                sent = self._post(target, rule.secret, delivery)
        return self._record(delivery, attempt, sent, host)

    def _post(self, target: CheckedTarget, secret: str, delivery: wa.DeliveryRow) -> _Sent:
        timeout = self._settings.webhook_timeout_s
        headers = {
            **signed_headers(secret, delivery.delivery_id, self._now(), delivery.body),
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "accept-encoding": "identity",
            "host": target.host_header,
        }
        extensions = {"sni_hostname": target.url.host} if target.url.scheme == "https" else {}
        started = time.perf_counter()
        with httpx.Client(
            transport=self._transport,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
        ) as client:
            try:
                with client.stream(
                    "POST",
                    target.pinned_url,
                    content=delivery.body.encode(),
                    headers=headers,
                    extensions=extensions,
                ) as response:
                    excerpt = _read_capped(response, started + timeout)
            except httpx.TimeoutException:
                latency = (time.perf_counter() - started) * 1000
                return _Sent("retry", None, latency, f"no answer within {timeout:g} s")
            except httpx.TransportError as exc:
                latency = (time.perf_counter() - started) * 1000
                return _Sent("retry", None, latency, f"{type(exc).__name__}: {exc}")
        latency = (time.perf_counter() - started) * 1000
        outcome, error = _classify(response.status_code)
        if error is not None and excerpt:
            error = f"{error}: {excerpt[:ERROR_EXCERPT_CHARS]}"
        retry_after = _retry_after(response.headers.get("retry-after"), self._now())
        return _Sent(outcome, response.status_code, latency, error, retry_after)

    def _record(
        self, delivery: wa.DeliveryRow, attempt: int, sent: _Sent, host: str
    ) -> AttemptResult:
        outcome, error = sent.outcome, sent.error
        if outcome == "retry" and attempt >= self._settings.webhook_max_attempts:
            outcome, error = "failed", f"{error} (gave up after {attempt} attempts)"
        done = self._now()
        next_at = None
        if outcome == "retry":
            next_at = done + retry_delay(attempt, self._settings, self._rng, sent.retry_after)
        row = wa.AttemptRow(
            delivery.delivery_id,
            delivery.rule_id,
            attempt,
            done,
            sent.status_code,
            sent.latency_ms,
            outcome,
            error,
        )
        with self._warehouse.transaction() as conn:
            wa.record_attempt(
                conn,
                row,
                status=_STATUS[outcome],
                next_attempt_at=next_at,
                finished_at=None if outcome == "retry" else done,
            )
            if outcome == "gone":
                wa.disable_rule(conn, delivery.rule_id, done, "endpoint answered 410 Gone")
        log = logger.info if outcome == "delivered" else logger.warning
        log(
            "webhook delivery=%s rule=%s attempt=%d outcome=%s status=%s host=%s latency_ms=%.0f",
            delivery.delivery_id,
            delivery.rule_id,
            attempt,
            outcome,
            sent.status_code if sent.status_code is not None else "-",
            host,
            sent.latency_ms,
        )
        return AttemptResult(
            delivery.delivery_id,
            delivery.rule_id,
            attempt,
            outcome,
            sent.status_code,
            sent.latency_ms,
            error,
            next_at,
        )


def _read_capped(response: httpx.Response, deadline: float) -> str:
    """At most `RESPONSE_CAP_BYTES` of the answer, and nothing after the deadline."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_raw():
            chunks.append(chunk)
            size += len(chunk)
            if size >= RESPONSE_CAP_BYTES or time.perf_counter() > deadline:
                break
    except httpx.TransportError:
        pass  # the status is what counts; a body cut short or too slow is left unread
    return b"".join(chunks)[:RESPONSE_CAP_BYTES].decode("utf-8", "replace").strip()


def deliver_due(
    warehouse: Warehouse,
    settings: Settings,
    now: Callable[[], datetime] = utc_now,
    should_stop: Callable[[], bool] = lambda: False,
) -> list[AttemptResult]:
    """The `serve` job: send every delivery that is due (first attempts and retries)."""
    return WebhookSender(warehouse, settings, now=now).deliver_due(should_stop=should_stop)
