"""Which provider this collector may collect now: leases kept in the warehouse's PostgreSQL.

Every collector renews, `RENEWALS_PER_TTL` times per `lease_ttl`, a lease per provider it is
configured for (`providers`). It also takes a provider of `standby_for` whose lease nobody holds,
but only once it has been up for one `lease_ttl` (so that, at start-up, the collector configured
for it wins). A lease is taken for `lease_ttl` less one renewal period: a collector that dies
stops renewing, its leases lapse at most that long after it died, and a standby, trying at every
renewal period, holds them at most `lease_ttl` after the death (plus one lease statement). Right
before a run writes, the lease is renewed once more: a collector that lost it (paused past its
expiry) abandons the write instead of storing a run another collector may store too.

On an embedded file every lease is always granted (one process holds the file).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from pipeline.settings import Settings
from warehouse import Warehouse, WarehouseError

__all__ = ["LeaseKeeper", "RENEWALS_PER_TTL", "lease_length", "new_holder_id"]

logger = logging.getLogger(__name__)

RENEWALS_PER_TTL = 6
"""The lease job runs six times per lease time; a lease lasts five of those periods, so four
renewals in a row may fail before it lapses."""


def lease_length(lease_ttl: timedelta) -> timedelta:
    """How long a taken lease lasts: one renewal period less than `lease_ttl`, so that a standby
    polling every period takes a dead holder's lease within `lease_ttl` of its last renewal."""
    return lease_ttl - lease_ttl / RENEWALS_PER_TTL


def new_holder_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def collect_lease(provider: str) -> str:
    return f"collect:{provider}"


class LeaseKeeper:
    """The leases of one collector process."""

    def __init__(
        self, warehouse: Warehouse, settings: Settings, now: Callable[[], datetime]
    ) -> None:
        self.holder = new_holder_id()
        self._warehouse = warehouse
        self._settings = settings
        self._now = now
        self._started = now()
        self._length = lease_length(settings.lease_ttl)
        self._held: dict[str, datetime] = {}
        self._lock = threading.Lock()

    @property
    def candidates(self) -> list[str]:
        """Lease names this collector may hold: its providers, then its standbys, then retention."""
        own = list(self._settings.providers)
        standby = [p for p in self._settings.standby_for if p not in own]
        return [collect_lease(p) for p in [*own, *standby]] + ["retention"]

    def refresh(self) -> None:
        """The lease job: renew what is held, take what is free and due to us."""
        warmed_up = self._now() - self._started >= self._settings.lease_ttl
        own = {collect_lease(p) for p in self._settings.providers} | {"retention"}
        for name in self.candidates:
            if name in own or name in self._held or warmed_up:
                self.take(name)

    def take(self, name: str) -> bool:
        """Take or renew lease `name` now; whether it is ours."""
        asked_at = self._now()
        try:
            ok = self._warehouse.take_lease(name, self.holder, self._length)
        except WarehouseError as exc:
            logger.warning("lease %s not renewed: %s", name, exc)
            ok = False
        with self._lock:
            had = name in self._held
            if ok:
                self._held[name] = asked_at + self._length
            else:
                self._held.pop(name, None)
        if ok and not had:
            logger.info("lease %s taken by %s", name, self.holder)
        elif had and not ok:
            logger.warning("lease %s lost by %s", name, self.holder)
        return ok

    def holds(self, name: str) -> bool:
        """Whether lease `name` is ours and, by our own clock, not expired."""
        with self._lock:
            until = self._held.get(name)
        return until is not None and self._now() < until

    def holds_provider(self, provider: str) -> bool:
        return self.holds(collect_lease(provider))

    def confirm_provider(self, provider: str) -> bool:
        """Renew the provider's lease now (before a write); whether it is still ours."""
        return self.holds_provider(provider) and self.take(collect_lease(provider))

    def release_all(self) -> None:
        """On a clean shutdown: free every lease now, so a standby need not wait for expiry."""
        with self._lock:
            names = list(self._held)
            self._held.clear()
        for name in names:
            try:
                self._warehouse.release_lease(name, self.holder)
            except WarehouseError as exc:
                logger.warning("lease %s not released: %s", name, exc)
