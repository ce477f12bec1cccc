"""One collection run: each provider fetched, parsed and stored on its own.

A provider that fails (HTTP error, garbage body, missing key, even a bug in its parser) is
recorded as a failed run with its error and no offers; the others carry on. So is an answer that
yields no offer at all (an empty list, or every record rejected): it would otherwise replace the
provider's last good snapshot with nothing. Its rejects are kept in the quarantine.

A rate source (the ECB, a `scrapers.RateSource`) takes its own small path: its rates are
stored (`fx_rates`) and its run is ok with no offers; rate sources are collected first, so that
the providers of the same collection convert their prices with today's rate
(pipeline/collection/currency.py, between parse and normalize).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Literal

import httpx
import pyarrow as pa

from pipeline.base import provider_module, utc_now
from pipeline.catalog import Catalog, get_catalog
from pipeline.collection.currency import RATE_BASE, rates_table, to_usd, warehouse_rates
from pipeline.collection.failures import failure_words
from pipeline.collection.normalize import normalize
from pipeline.collection.quality import QualityBounds, RunQuality, answer_shape, assess
from pipeline.errors import PipelineError
from scrapers import (
    Credentials,
    MissingCredentialsError,
    Provider,
    ProviderError,
    RateSource,
    Source,
    build_client,
    credentials_from_env,
)
from scrapers.base import REPLAY_HEADER
from scrapers.models import ParseResult, Reject
from scrapers.registry import replay_handler
from scrapers.urls import confine
from warehouse import RunRow, Warehouse, WarehouseError
from warehouse.quality import insert_quality
from warehouse.queries import insert_run
from warehouse.rates import insert_rates

__all__ = [
    "Adjust",
    "AdjustRates",
    "RateRow",
    "RunReport",
    "Stage",
    "provider_module",
    "run_collection",
    "store_run",
    "utc_now",
]

logger = logging.getLogger(__name__)
MAX_QUARANTINE_ROWS = 1000
"""Rejected records kept (quarantined, and listed in a run's report) per run; `reject_count`
counts them all. One upload of 10,000 bad records once grew the database by 30 MB."""

Stage = Literal["fetching", "parsing", "storing", "ok", "failed"]
ProgressCallback = Callable[[str, Stage], None]
Adjust = Callable[[str, ParseResult], ParseResult]
"""Applied to a provider's parsed offers (by its name) before conversion: the demo's seeded price
movement (pipeline/collection/demo.py); a real collection stores what was parsed."""
RateRow = tuple[date, str, float]
"""One exchange rate as stored: its reference date, the currency and units per euro."""
AdjustRates = Callable[[list[RateRow], datetime], list[RateRow]]
"""Applied to a rate source's parsed rates with the run's observation time, before storing: the
demo dates its recorded rates to the replay's day (pipeline/collection/demo.py)."""
REPLAY_PLACEHOLDER_KEY = "replay"
"""Sent as the key when a replayed provider needs one and none is set (nothing leaves)."""


@dataclass(frozen=True, slots=True)
class RunReport:
    provider: str
    run_id: str
    status: Literal["ok", "failed"]
    offer_count: int
    reject_count: int
    error: str | None
    seconds: float
    observed_at: datetime
    rejects: list[Reject] = field(default_factory=list)


def _replay_client(provider: Source, replay: Path) -> httpx.Client:
    """A client answering from `replay`: one recorded body, or a directory of recorded answers
    the provider module knows how to serve (`replay_directory`)."""
    if replay.is_dir():
        try:
            handler = replay_handler(provider)(replay)
        except ValueError as exc:
            raise ProviderError(str(exc)) from None
        return build_client(httpx.MockTransport(handler))
    body = replay.read_bytes()
    client = build_client(httpx.MockTransport(lambda request: httpx.Response(200, content=body)))
    client.headers[REPLAY_HEADER] = "1"  # one recorded answer: its next-page link ends the listing
    return client


def _credentials(provider: Source, env: Mapping[str, str], replaying: bool) -> Credentials | None:
    if replaying and provider.key_required and not env.get(provider.env_key or ""):
        return Credentials(REPLAY_PLACEHOLDER_KEY)
    return credentials_from_env(provider, env)


def _collect_one(
    provider: Provider | RateSource,
    warehouse: Warehouse,
    *,
    now: Callable[[], datetime],
    observed_at: datetime | None,
    replay: Path | None,
    env: Mapping[str, str],
    client_factory: Callable[[], httpx.Client],
    catalog: Catalog,
    progress: ProgressCallback,
    should_stop: Callable[[], bool],
    bounds: QualityBounds,
    adjust: Adjust | None = None,
    adjust_rates: AdjustRates | None = None,
) -> RunReport | None:
    started = time.perf_counter()
    started_at = now()
    observed = observed_at or started_at
    run_id = f"{provider.name}-{started_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    source = f"replay:{replay}" if replay is not None else provider.url

    def stored(
        status: Literal["ok", "failed"],
        error: str | None,
        result: ParseResult | None = None,
        rates: pa.Table | None = None,
    ) -> RunReport:
        offer_count = result.offer_count if result else 0
        rejects = result.rejects if result else []
        progress(provider.name, "storing")
        row = RunRow(
            run_id=run_id,
            provider=provider.name,
            started_at=started_at,
            finished_at=now(),
            observed_at=observed,
            status=status,
            offer_count=offer_count,
            reject_count=len(rejects),
            error=error,
            source=source,
        )
        quality = None
        if rates is None:  # a provider's run, not a rate source's
            try:  # it reads the provider's earlier runs: the catalog may be down
                quality = assess(
                    warehouse,
                    run_id=run_id,
                    provider=provider.name,
                    observed_at=observed,
                    state="not_configured" if not_configured else status,
                    result=result,
                    shape=shape,
                    bounds=bounds,
                )
            except WarehouseError as exc:  # storing says why, below, or stores it without
                logger.warning("run provider=%s: quality not assessed: %s", provider.name, exc)
        try:
            store_run(warehouse, row, result, rates, quality, bounds)
        except WarehouseError as exc:  # catalog unreachable, data path full or read-only
            if status == "ok":  # a failed run is one small row: the catalog may still take it
                return stored("failed", f"storing the snapshot failed: {exc}")
            logger.error("run provider=%s not recorded: %s", provider.name, exc)
        progress(provider.name, status)
        return RunReport(
            provider=provider.name,
            run_id=run_id,
            status=status,
            offer_count=offer_count,
            reject_count=len(rejects),
            error=error,
            seconds=time.perf_counter() - started,
            observed_at=observed,
            rejects=list(rejects[:MAX_QUARANTINE_ROWS]),
        )

    result = rates = None
    shape: frozenset[str] | None = None
    not_configured = False
    failure: str | None = None
    try:
        progress(provider.name, "fetching")
        creds = _credentials(provider, env, replaying=replay is not None)
        client = _replay_client(provider, replay) if replay is not None else client_factory()
        with confine(client, provider.hosts, provider.name):
            payload = provider.fetch(client, creds)
        progress(provider.name, "parsing")
        if isinstance(provider, RateSource):
            found = [(r.rate_date, r.currency, r.rate) for r in provider.parse_rates(payload)]
            if adjust_rates is not None:
                found = adjust_rates(found, observed)
            rates = rates_table(provider.name, RATE_BASE, found, run_id, observed)
        else:
            shape = answer_shape(payload)
            parsed = provider.parse(payload, observed)
            if adjust is not None:
                parsed = adjust(provider.name, parsed)
            parsed = to_usd(parsed, warehouse_rates(warehouse))
            result = normalize(parsed, catalog)
    except (ProviderError, PipelineError) as exc:  # a cancelled fetch is abandoned below
        failure = failure_words(exc)
        not_configured = isinstance(exc, MissingCredentialsError)
    except Exception as exc:  # the per-provider edge: a parser bug must not stop the others
        logger.exception("%s failed unexpectedly", provider.name)
        failure = failure_words(exc)
    if should_stop():
        logger.info(
            "run provider=%s status=abandoned (stopping, or lease lost, before its write)",
            provider.name,
        )
        return None
    if failure is None and rates is not None:  # a rate source: rates, never offers
        return _logged(stored("ok", None, rates=rates))
    if failure is not None or result is None:
        return _logged(stored("failed", failure or "no result"))
    if result.offer_count == 0:  # never replace the last good snapshot with nothing
        return _logged(stored("failed", _no_offers(provider.name, result), result))
    return _logged(stored("ok", None, result))


def _no_offers(provider: str, result: ParseResult) -> str:
    if not result.rejects:
        return f"{provider}: the answer holds no offers; the last good snapshot stays"
    return (
        f"{provider}: all {len(result.rejects)} records rejected (first: "
        f"{result.rejects[0].reason}); the last good snapshot stays"
    )


def store_run(
    warehouse: Warehouse,
    run: RunRow,
    result: ParseResult | None,
    rates: pa.Table | None = None,
    quality: RunQuality | None = None,
    bounds: QualityBounds | None = None,
) -> None:
    """Store one provider run whole, in one transaction: its row, offers and rejects in bulk,
    its quality and price outliers (a rate source's run: its row and its rates)."""
    offers = result.table if result is not None and result.offer_count else None
    rejects = result.rejects_table(run.observed_at) if result and result.rejects else None
    outliers = (bounds or QualityBounds()).outliers
    if rejects is not None:  # the count stays whole in the run row (`reject_count`)
        rejects = rejects.slice(0, MAX_QUARANTINE_ROWS)
    with warehouse.transaction() as conn:
        insert_run(conn, run, offers, rejects, outliers)
        if quality is not None:
            insert_quality(conn, quality.row, quality.unknowns, quality.reasons)
        if rates is not None and rates.num_rows:
            insert_rates(conn, rates)


def _logged(report: RunReport) -> RunReport:
    """One structured line per run."""
    level = logging.INFO if report.status == "ok" else logging.WARNING
    logger.log(
        level,
        "run provider=%s status=%s offers=%d rejects=%d seconds=%.2f error=%s",
        report.provider,
        report.status,
        report.offer_count,
        report.reject_count,
        report.seconds,
        report.error or "-",
    )
    return report


def run_collection(
    names: Sequence[str],
    warehouse: Warehouse,
    *,
    now: Callable[[], datetime] = utc_now,
    observed_at: datetime | None = None,
    replays: Mapping[str, Path] | None = None,
    env: Mapping[str, str] | None = None,
    client_factory: Callable[[], httpx.Client] = build_client,
    catalog: Catalog | None = None,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    bounds: QualityBounds | None = None,
    adjust: Adjust | None = None,
    adjust_rates: AdjustRates | None = None,
) -> list[RunReport]:
    """Collect each named provider in turn; one transaction and one report per provider.

    A run whose `should_stop()` turns true before its write is abandoned: nothing is stored and
    it has no report.
    """
    modules = sorted(  # rate sources first: the providers convert with the rates just stored
        (provider_module(name) for name in names), key=lambda s: not isinstance(s, RateSource)
    )
    replays = replays or {}
    for name in replays:
        provider_module(name)
    reports = (
        _collect_one(
            module,
            warehouse,
            now=now,
            observed_at=observed_at,
            replay=replays.get(module.name),
            env=os.environ if env is None else env,
            client_factory=client_factory,
            catalog=catalog or get_catalog(),
            progress=progress or (lambda _name, _stage: None),
            should_stop=should_stop,
            bounds=bounds or QualityBounds(),
            adjust=adjust,
            adjust_rates=adjust_rates,
        )
        for module in modules
    )
    return [report for report in reports if report is not None]
