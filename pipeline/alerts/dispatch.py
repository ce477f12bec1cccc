"""`serve`'s webhook sending: a small pool of senders fed from the outbox, never waiting on one.

Each poll (every `webhook_poll`) claims due deliveries while a sender is free and hands each to a
sender thread of its own; a sender that is done claims the next due delivery itself. So at most
`SENDERS` attempts are in flight, a receiver that hangs holds one sender for at most
`webhook_timeout_s`, and a delivery that falls due meanwhile goes out at the next poll on another.

At shutdown the stop flag cuts attempts in flight short (a read gives up within
`transport.SLICE_S`); each is recorded as an interrupted attempt. One still stuck after
`SHUTDOWN_GRACE_S` (in a connect to an unresponsive address, say) is left behind unrecorded: its
lease runs out and a restart sends it again, with the same `webhook-id`.
"""

from __future__ import annotations

import logging
import threading
import time

from pipeline.alerts.delivery import SENDERS, WebhookSender
from warehouse import alerts as wa

__all__ = ["SHUTDOWN_GRACE_S", "WebhookDispatcher"]

logger = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 1.0
"""Longest `shutdown` waits for attempts in flight (`serve` must stop within 2 s)."""


class WebhookDispatcher:
    """Starts attempts of due deliveries on up to `senders` daemon threads."""

    def __init__(
        self, sender: WebhookSender, stop: threading.Event, *, senders: int = SENDERS
    ) -> None:
        self._sender = sender
        self._stop = stop
        self._free = threading.BoundedSemaphore(senders)
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._threads)

    def poll(self) -> int:
        """Start an attempt for each due delivery while a sender is free; how many started."""
        started = 0
        while not self._stop.is_set() and self._free.acquire(blocking=False):
            try:
                delivery = self._sender.claim_due()
            except BaseException:
                self._free.release()
                raise
            if delivery is None:
                self._free.release()
                break
            thread = threading.Thread(
                target=self._send, args=(delivery,), name="webhook-sender", daemon=True
            )
            with self._lock:
                self._threads.add(thread)
            thread.start()
            started += 1
        return started

    def _send(self, delivery: wa.DeliveryRow | None) -> None:
        try:
            while delivery is not None:
                self._sender.attempt(delivery)
                delivery = None if self._stop.is_set() else self._sender.claim_due()
        except Exception:  # the sender's edge: the claim runs out and the delivery is retried
            logger.exception("webhook sender stopped on an error")
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
            self._free.release()

    def shutdown(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """Cut attempts in flight short, wait up to `grace_s` for them, then record no more."""
        self._stop.set()
        end = time.monotonic() + grace_s
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))
        self._sender.close()
        left = self.in_flight
        if left:
            logger.warning("%d webhook attempt(s) left unrecorded at shutdown", left)
