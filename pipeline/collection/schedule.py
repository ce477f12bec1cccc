"""Collection on a schedule: one APScheduler 3.x interval job per provider.

Follows APScheduler's user guide: one `BackgroundScheduler` per process, module-level job
functions that only call `run_collection`, explicit ids, `max_instances=1` (a slow run never
overlaps itself), `coalesce=True`, a misfire grace sized to the interval, and a listener that turns
job errors and skipped overlapping runs into log lines.

Stopping (`shutdown`, on SIGTERM) is prompt: the stop flag ends a provider's retry wait at once
(`interruptible_sleep`; the run is abandoned, nothing stored) and cuts webhook attempts in flight
short, so `serve` exits within about a second. A provider's write that has begun commits first.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import httpx
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from pipeline.alerts import WebhookDispatcher, WebhookSender
from pipeline.alerts.dispatch import SHUTDOWN_GRACE_S
from pipeline.base import utc_now
from pipeline.collection.demo import demo_rates
from pipeline.collection.leases import RENEWALS_PER_TTL, LeaseKeeper
from pipeline.collection.runs import Collected, collect
from pipeline.market.history import prune
from pipeline.settings import Settings, SettingsError
from scrapers import RATE_SOURCES, RetryTransport, build_client
from scrapers.base import interruptible_sleep
from warehouse import Warehouse

__all__ = ["Collector", "collect_provider", "deliver_webhooks", "retry_delay"]

logger = logging.getLogger(__name__)

FIRST_RUN_STAGGER = timedelta(seconds=2)
PRUNE_EVERY = timedelta(days=1)
FIRST_PRUNE_AFTER = timedelta(minutes=10)
"""Retention runs daily, first a little after start-up (not in the way of the first collections)."""
"""Start-up runs are spread a little so that the providers are not all fetched at once."""
FIRST_RETRY = timedelta(minutes=1)


def retry_delay(failures: int, interval: timedelta) -> timedelta:
    """When a provider that failed `failures` times in a row is tried again: a minute after the
    first failure, then 2, 4, 8... minutes, never later than its own interval."""
    doublings = min(max(failures, 1) - 1, 30)
    return min(interval, FIRST_RETRY * (1 << doublings))


def collect_provider(
    provider: str,
    warehouse: Warehouse,
    settings: Settings,
    stop: threading.Event,
    client_factory: Callable[[], httpx.Client],
    now: Callable[[], datetime],
    leases: LeaseKeeper | None = None,
) -> Collected | None:
    """The job: one collection of one provider (abandoned before its write if shutting down,
    or if another collector holds the provider's lease)."""
    if stop.is_set() or (leases is not None and not leases.holds_provider(provider)):
        return None

    def should_stop() -> bool:
        return stop.is_set() or (leases is not None and not leases.confirm_provider(provider))

    replay = _replay_file(settings.replay_dir, provider) if settings.replay_dir else None
    if replay is not None and replay.suffix == LOCAL_PROVIDER_SUFFIX:
        client_factory = functools.partial(_local_client, _loopback_url(replay), stop)
        replay = None
    return collect(  # the events it fires go to the outbox, sent by the pool
        [provider],
        warehouse,
        settings,
        now=now,
        replays={provider: replay} if replay is not None else None,
        client_factory=client_factory,
        should_stop=should_stop,
        adjust_rates=demo_rates if settings.demo else None,  # the demo's rates stay current
    )


LOCAL_PROVIDER_SUFFIX = ".url"


def _replay_file(directory: Path, provider: str) -> Path | None:
    """Testing and the demo (`replay_dir`): the saved body `<dir>/<provider>.*` or folder of
    answers `<dir>/<provider>/`, if there is one; or `<provider>.url`, a loopback URL that the
    provider's requests are all sent to instead."""
    found = sorted(directory.glob(f"{provider}.*"))
    if not found and (directory / provider).is_dir():
        return directory / provider
    return found[0] if found else None


def _loopback_url(path: Path) -> httpx.URL:
    url = httpx.URL(path.read_text(encoding="utf-8").strip())
    try:
        loopback = ipaddress.ip_address(url.host).is_loopback
    except ValueError:
        loopback = False
    if url.scheme != "http" or not loopback:
        raise SettingsError(f"{path} must hold an http:// URL on a loopback address, got {url}")
    return url


class _ToLocal(httpx.BaseTransport):
    """Testing only: sends every request to one local server, keeping its path."""

    def __init__(self, base: httpx.URL) -> None:
        self._base = base
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(
            scheme=self._base.scheme, host=self._base.host, port=self._base.port
        )
        request.headers["host"] = self._base.netloc.decode("ascii")
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def _local_client(base: httpx.URL, stop: threading.Event) -> httpx.Client:
    return build_client(RetryTransport(_ToLocal(base), sleep=interruptible_sleep(stop)))


def deliver_webhooks(dispatcher: WebhookDispatcher) -> None:
    """The job: start an attempt of each due delivery on a free sender (never waits for one)."""
    dispatcher.poll()


def prune_raw(
    warehouse: Warehouse,
    settings: Settings,
    now: Callable[[], datetime],
    stop: threading.Event,
    leases: LeaseKeeper | None = None,
) -> None:
    """The retention job: raw observations older than `settings.retention` go (summaries stay).

    On a lake only the holder of the `retention` lease prunes."""
    if stop.is_set() or (leases is not None and not leases.holds("retention")):
        return
    deleted = prune(warehouse, now(), settings.retention)
    logger.info("prune %s", " ".join(f"{table}={n}" for table, n in deleted.items()))


class Collector:
    """The schedule of one `serve` process; `start()` in the app lifespan, `shutdown()` after."""

    def __init__(
        self,
        warehouse: Warehouse,
        settings: Settings,
        *,
        client_factory: Callable[[], httpx.Client] | None = None,
        now: Callable[[], datetime] = utc_now,
        run_at_start: bool = True,
    ) -> None:
        self.settings = settings
        self.stop = threading.Event()
        self._warehouse = warehouse
        # by default a provider's retry waits end as soon as the schedule stops
        self._client_factory = client_factory or functools.partial(
            build_client, sleep=interruptible_sleep(self.stop)
        )
        self.webhooks = WebhookDispatcher(
            WebhookSender(warehouse, settings, now=now, stop=self.stop), self.stop
        )
        self._now = now
        self._run_at_start = run_at_start
        # On a lake several collectors share the providers through leases; a file has one.
        self.leases = LeaseKeeper(warehouse, settings, now) if warehouse.lake else None
        standby = settings.standby_for if self.leases is not None else []
        self.providers = sorted(  # rate sources first: their first run precedes the others'
            dict.fromkeys([*settings.providers, *standby]),
            key=lambda name: name not in RATE_SOURCES,
        )
        # One worker per provider: a hanging provider never delays the others.
        workers = max(1, len(self.providers))
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=workers)}, timezone="UTC"
        )
        self.scheduler.add_listener(
            self._on_event, EVENT_JOB_ERROR | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_MISSED
        )
        self.scheduler.add_listener(self._after_run, EVENT_JOB_EXECUTED)
        self.failures: dict[str, int] = {}
        """Failed runs in a row per provider (a failed provider is retried sooner)."""

    @property
    def running(self) -> bool:
        return bool(self.scheduler.running)

    def start(self) -> None:
        first = self._now()
        if self.leases is not None:
            self.leases.refresh()  # before the first runs: they collect only what they hold
            self._add_lease_job(self.leases)
        for index, provider in enumerate(self.providers):
            interval = self.settings.interval(provider)
            # Leaving next_run_time out lets the trigger compute it (None would pause the job).
            first_run = {"next_run_time": first + FIRST_RUN_STAGGER * index}
            self.scheduler.add_job(
                collect_provider,
                trigger="interval",
                seconds=interval.total_seconds(),
                jitter=min(self.settings.jitter_s, int(interval.total_seconds() / 10)) or None,
                args=[provider, self._warehouse, self.settings, self.stop,
                      self._client_factory, self._now, self.leases],
                id=f"collect:{provider}",
                name=f"collect {provider}",
                max_instances=1,
                coalesce=True,
                misfire_grace_time=max(1, int(interval.total_seconds() / 2)),
                replace_existing=True,
                **(first_run if self._run_at_start else {}),
            )
        # Webhooks go out from a pool of their own: a slow receiver never delays a collection.
        self.scheduler.add_executor(ThreadPoolExecutor(max_workers=1), alias="webhooks")
        self.scheduler.add_job(
            deliver_webhooks,
            trigger="interval",
            seconds=self.settings.webhook_poll.total_seconds(),
            args=[self.webhooks],
            id="deliver:webhooks",
            name="deliver webhooks",
            executor="webhooks",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(self.settings.webhook_poll.total_seconds())),
            replace_existing=True,
        )  # its first run, one poll after start-up, resumes what a stopped process left pending
        self.scheduler.add_job(
            prune_raw,
            trigger="interval",
            seconds=PRUNE_EVERY.total_seconds(),
            args=[self._warehouse, self.settings, self._now, self.stop, self.leases],
            id="prune:raw",
            name="prune raw observations",
            executor="webhooks",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=int(PRUNE_EVERY.total_seconds()),
            replace_existing=True,
            next_run_time=self._now() + FIRST_PRUNE_AFTER,
        )
        self.scheduler.start()
        logger.info("collection schedule started for %s", ", ".join(self.providers))

    def _add_lease_job(self, leases: LeaseKeeper) -> None:
        renew_every = self.settings.lease_ttl / RENEWALS_PER_TTL
        self.scheduler.add_executor(ThreadPoolExecutor(max_workers=1), alias="leases")
        self.scheduler.add_job(
            leases.refresh,
            trigger="interval",
            seconds=renew_every.total_seconds(),
            id="leases:refresh",
            name="renew leases",
            executor="leases",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(renew_every.total_seconds())),
            replace_existing=True,
        )

    def next_run_at(self, provider: str) -> datetime | None:
        job = self.scheduler.get_job(f"collect:{provider}")
        return job.next_run_time if job is not None else None

    def shutdown(self) -> None:
        """Let a running collection finish its write (or abandon it before: a retry wait ends at
        once), cut webhook attempts short, then stop."""
        self.stop.set()  # everything winds down at once from here
        grace_ends = time.monotonic() + SHUTDOWN_GRACE_S
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.webhooks.shutdown(grace_s=max(0.0, grace_ends - time.monotonic()))
        if self.leases is not None:
            self.leases.release_all()
        logger.info("collection schedule stopped")

    def _after_run(self, event: JobExecutionEvent) -> None:
        """After a failed run, the provider's next run comes sooner (`retry_delay`)."""
        collected = event.retval
        if not event.job_id.startswith("collect:") or not isinstance(collected, Collected):
            return
        if not collected.reports:  # abandoned: nothing was learnt
            return
        provider = event.job_id.removeprefix("collect:")
        if all(report.status == "ok" for report in collected.reports):
            self.failures.pop(provider, None)
            return
        failures = self.failures.get(provider, 0) + 1
        delay = retry_delay(failures, self.settings.interval(provider))
        job = self.scheduler.get_job(event.job_id)
        soon = datetime.now(job.next_run_time.tzinfo) + delay if job and job.next_run_time else None
        if job is not None and soon is not None and soon < job.next_run_time:
            job.modify(next_run_time=soon)
            logger.info(
                "%s failed %d time(s) in a row; next try in %s", provider, failures, delay
            )
        self.failures[provider] = failures  # after the job moved (tests wait for this)

    @staticmethod
    def _on_event(event: JobExecutionEvent) -> None:
        if event.code == EVENT_JOB_MAX_INSTANCES:
            logger.warning("%s still running; skipped an overlapping run", event.job_id)
        elif event.code == EVENT_JOB_MISSED:
            logger.warning("%s missed its run time; coalesced", event.job_id)
        else:
            logger.error("%s raised %r", event.job_id, event.exception)
