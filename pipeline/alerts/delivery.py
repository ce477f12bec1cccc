"""Sending stored events: one signed POST per attempt, retries with backoff, from the outbox.

An attempt claims its delivery right before it starts (its `next_attempt_at` is pushed past the
attempt's deadline plus a margin: a lease), so a delivery is never sent twice at once, and one
whose sender died is taken up again once the lease runs out: a restart resumes what was pending.
An attempt ends by `webhook_timeout_s` (connect, TLS, send and read together: `transport`), so
the lease cannot run out during it. At most `SENDERS` attempts run at once.

- 2xx: delivered. 410 Gone: failed, and the rule is disabled (its endpoint is gone).
- timeout, connection error, 408, 429, 5xx: retried after `webhook_backoff` × 2^(n-1), capped at
  `webhook_max_backoff`, with equal jitter (AWS Architecture Blog, "Exponential Backoff and
  Jitter"), and never sooner than `Retry-After` clamped to `webhook_max_backoff`; `failed`
  after `webhook_max_attempts`.
- any other answer (3xx: redirects are not followed; 4xx): failed at once.
- a target refused at send time (its name now resolves to a private address, say): failed.
- anything unexpected while sending: logged and recorded as a retry, so every attempt counts.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

import httpx

from pipeline.alerts.errors import UnresolvableTargetError, UnsafeTargetError
from pipeline.alerts.signing import signed_headers
from pipeline.alerts.targets import CheckedTarget, Resolver, check_target, resolve_host
from pipeline.alerts.transport import DeadlineTransport
from pipeline.base import utc_now
from pipeline.settings import Settings
from scrapers.base import parse_retry_after
from warehouse import Warehouse
from warehouse import alerts as wa

__all__ = ["SENDERS", "AttemptResult", "Outcome", "WebhookSender", "deliver_due", "retry_delay"]

logger = logging.getLogger(__name__)

Outcome = Literal["delivered", "retry", "failed", "gone"]
RESPONSE_CAP_BYTES = 4096
"""Most of a receiver's answer ever read; the rest is left unread."""
ERROR_EXCERPT_CHARS = 200
MAX_DOUBLINGS = 30
"""Past this the cap has long taken over (and a timedelta would overflow)."""
LEASE_MARGIN = timedelta(seconds=30)
"""A claim lasts the attempt's deadline and this margin (for recording the attempt)."""
SENDERS = 4
"""Attempts in flight at once, per process: a slow receiver holds one sender, never the rest."""
DUE_BATCH = 100
USER_AGENT = "gpuprices-webhooks/0.1"
STOPPING = "interrupted: gpuprices is stopping"
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
class AttemptResult(wa.AttemptRow):
    """An attempt as stored, and when the next one is due: `outcome` `retry` means the delivery
    stays pending until `next_attempt_at`."""

    next_attempt_at: datetime | None = None


def retry_delay(
    attempt: int, settings: Settings, rng: Callable[[], float], retry_after: timedelta | None
) -> timedelta:
    """Wait after failed attempt number `attempt` (1-based): never past `webhook_max_backoff`,
    whatever `Retry-After` asks."""
    doublings = min(max(attempt - 1, 0), MAX_DOUBLINGS)
    backoff = min(settings.webhook_backoff * (1 << doublings), settings.webhook_max_backoff)
    jittered = backoff * (0.5 + rng() / 2)
    if retry_after is None:
        return jittered
    return max(jittered, min(retry_after, settings.webhook_max_backoff))


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
    """Sends due deliveries of one warehouse under one set of settings.

    `stop` (the `serve` process's) cuts attempts in flight short; after `close()` no attempt
    is recorded any more (the warehouse is about to close).
    """

    def __init__(
        self,
        warehouse: Warehouse,
        settings: Settings,
        *,
        now: Callable[[], datetime] = utc_now,
        resolver: Resolver = resolve_host,
        transport: httpx.BaseTransport | None = None,
        rng: Callable[[], float] = random.random,
        stop: threading.Event | None = None,
    ) -> None:
        self._warehouse = warehouse
        self._settings = settings
        self._now = now
        self._resolver = resolver
        self._transport = transport
        """Tests only: replaces the deadline transport of each attempt."""
        self._rng = rng
        self._stop = stop or threading.Event()
        self._recording = threading.Lock()
        self._closed = False

    @property
    def _lease(self) -> timedelta:
        return timedelta(seconds=self._settings.webhook_timeout_s) + LEASE_MARGIN

    def claim_due(self) -> wa.DeliveryRow | None:
        """The oldest due delivery, leased to this sender for one attempt; None when none is due."""
        now = self._now()
        with self._warehouse.transaction() as conn:
            due = wa.claim_due_deliveries(conn, now, now + self._lease, limit=1)
        return due[0] if due else None

    def _claim(self, delivery_id: str) -> wa.DeliveryRow | None:
        now = self._now()
        with self._warehouse.transaction() as conn:
            return wa.claim_delivery(conn, delivery_id, now, now + self._lease)

    def deliver_due(
        self, *, limit: int = DUE_BATCH, should_stop: Callable[[], bool] = lambda: False
    ) -> list[AttemptResult]:
        """Attempt every delivery that is due, oldest first, `SENDERS` at a time; each is
        claimed just before its attempt."""
        taken = itertools.count()

        def work() -> list[AttemptResult]:
            done: list[AttemptResult] = []
            while not (should_stop() or self._stop.is_set()) and next(taken) < limit:
                delivery = self.claim_due()
                if delivery is None:
                    break
                done.append(self.attempt(delivery))
            return done

        with ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook") as pool:
            batches = [pool.submit(work) for _ in range(SENDERS)]
        return [result for batch in batches for result in batch.result()]

    def deliver(self, delivery_ids: Sequence[str]) -> list[AttemptResult]:
        """Attempt these deliveries now, `SENDERS` at a time (each bounded by the timeout)."""

        def one(delivery_id: str) -> AttemptResult | None:
            delivery = self._claim(delivery_id)
            return self.attempt(delivery) if delivery is not None else None

        if not delivery_ids:
            return []
        workers = min(len(delivery_ids), SENDERS)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="webhook") as pool:
            return [r for r in pool.map(one, delivery_ids) if r is not None]

    def close(self) -> None:
        """Record no more attempts (waits for one being recorded)."""
        with self._recording:
            self._closed = True

    def attempt(self, delivery: wa.DeliveryRow) -> AttemptResult:
        """One attempt of a delivery this sender has claimed, recorded whatever happens."""
        try:
            sent, host = self._send(delivery)
        except Exception as exc:  # the per-attempt edge: a bug must not leave it unrecorded
            logger.exception("webhook delivery=%s failed unexpectedly", delivery.delivery_id)
            sent, host = _Sent("retry", None, 0.0, f"{type(exc).__name__}: {exc}"), "-"
        return self._record(delivery, delivery.attempts + 1, sent, host)

    def _send(self, delivery: wa.DeliveryRow) -> tuple[_Sent, str]:
        with self._warehouse.cursor() as cur:
            rule = wa.get_rule(cur, delivery.rule_id)
        if rule is None or rule.disabled_at is not None:
            return _Sent("failed", None, 0.0, "alert deleted or disabled"), "-"
        try:
            target = check_target(
                rule.url,
                allow_private=self._settings.allow_private_webhooks,
                resolver=self._resolver,
            )
        except UnsafeTargetError as exc:
            return _Sent("failed", None, 0.0, f"target refused at send time: {exc}"), "-"
        except UnresolvableTargetError as exc:
            return _Sent("retry", None, 0.0, str(exc)), "-"
        return self._post(target, rule.secret, delivery), target.url.host

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
        error: str | None
        started = time.perf_counter()
        with httpx.Client(
            transport=self._transport or DeadlineTransport(timeout, self._stop),
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
            except httpx.TransportError as exc:
                latency = (time.perf_counter() - started) * 1000
                if self._stop.is_set():
                    error = STOPPING
                elif isinstance(exc, httpx.TimeoutException):
                    error = f"no answer within {timeout:g} s"
                else:
                    error = f"{type(exc).__name__}: {exc}"
                return _Sent("retry", None, latency, error)
        latency = (time.perf_counter() - started) * 1000
        outcome, error = _classify(response.status_code)
        if error is not None and excerpt:
            error = f"{error}: {excerpt[:ERROR_EXCERPT_CHARS]}"
        retry_after = parse_retry_after(response.headers.get("retry-after"), self._now())
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
        row = AttemptResult(
            delivery.delivery_id,
            delivery.rule_id,
            attempt,
            done,
            sent.status_code,
            sent.latency_ms,
            outcome,
            error,
            next_at,
        )
        with self._recording:
            if self._closed:  # shutting down: the lease runs out and a restart sends it again
                logger.warning("webhook delivery=%s attempt not recorded: stopped", row.delivery_id)
            else:
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
        return row


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
    """Send every delivery that is due now (first attempts and retries) and wait for them.

    `serve` sends through a `WebhookDispatcher` instead, which never waits for a slow one."""
    return WebhookSender(warehouse, settings, now=now).deliver_due(should_stop=should_stop)
