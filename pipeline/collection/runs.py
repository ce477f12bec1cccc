"""One collection as every front end runs it: the providers collected with the settings' keys,
then the alert rules evaluated on what was stored. `gpuprices collect` and the scheduler's jobs
both call `collect`, so a key in a `--config` file works for both."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

from pipeline.alerts import evaluate_alerts
from pipeline.base import utc_now
from pipeline.collection.collect import (
    Adjust,
    AdjustRates,
    ProgressCallback,
    RunReport,
    run_collection,
)
from pipeline.settings import Settings
from scrapers import build_client
from warehouse import Warehouse

__all__ = ["Collected", "collect"]


@dataclass(frozen=True, slots=True)
class Collected:
    reports: list[RunReport]
    fired: list[str]
    """Ids of the webhook deliveries the alert rules queued (sent by the outbox)."""


def collect(
    names: Sequence[str],
    warehouse: Warehouse,
    settings: Settings,
    *,
    now: Callable[[], datetime] = utc_now,
    observed_at: datetime | None = None,
    replays: Mapping[str, Path] | None = None,
    client_factory: Callable[[], httpx.Client] = build_client,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    adjust: Adjust | None = None,
    adjust_rates: AdjustRates | None = None,
) -> Collected:
    """Collect `names` (one transaction each), then evaluate the alert rules once."""
    reports = run_collection(
        names,
        warehouse,
        now=now,
        observed_at=observed_at,
        replays=replays,
        env=settings.provider_env(),
        client_factory=client_factory,
        progress=progress,
        should_stop=should_stop,
        bounds=settings.quality_bounds(),
        adjust=adjust,
        adjust_rates=adjust_rates,
    )
    if should_stop():  # shutting down (or the lease moved): the next run evaluates
        return Collected(reports, [])
    fired = evaluate_alerts(warehouse, settings, now())
    return Collected(reports, fired)
