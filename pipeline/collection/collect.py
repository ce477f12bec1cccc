"""One collection run: each provider fetched, parsed and stored on its own.

A provider that fails (HTTP error, garbage body, missing key, even a bug in its parser) is
recorded as a failed run with its error and no offers; the others carry on.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

import httpx

from pipeline.base import provider_module, utc_now
from pipeline.catalog import Catalog, get_catalog
from pipeline.collection.failures import failure_words
from pipeline.collection.normalize import normalize, offers_to_table, rejects_to_table
from scrapers import Credentials, ProviderError, ProviderModule, build_client
from scrapers.base import credentials_from_env
from scrapers.models import ParseResult, Reject
from warehouse import RunRow, Warehouse
from warehouse.queries import insert_run

__all__ = ["RunReport", "Stage", "provider_module", "run_collection", "store_run", "utc_now"]

logger = logging.getLogger(__name__)

Stage = Literal["fetching", "parsing", "storing", "ok", "failed"]
ProgressCallback = Callable[[str, Stage], None]
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


def _replay_client(body: bytes) -> httpx.Client:
    return build_client(httpx.MockTransport(lambda request: httpx.Response(200, content=body)))


def _credentials(
    provider: ProviderModule, env: Mapping[str, str], replaying: bool
) -> Credentials | None:
    if replaying and provider.KEY_REQUIRED and not env.get(provider.ENV_KEY or ""):
        return Credentials(REPLAY_PLACEHOLDER_KEY)
    return credentials_from_env(provider, env)


def _collect_one(
    provider: ProviderModule,
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
) -> RunReport | None:
    started = time.perf_counter()
    started_at = now()
    observed = observed_at or started_at
    run_id = f"{provider.NAME}-{started_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    source = f"replay:{replay}" if replay is not None else provider.URL

    def stored(status: Literal["ok", "failed"], error: str | None, result=None) -> RunReport:
        offer_count = result.offer_count if result else 0
        rejects = result.rejects if result else []
        progress(provider.NAME, "storing")
        row = RunRow(
            run_id=run_id,
            provider=provider.NAME,
            started_at=started_at,
            finished_at=now(),
            observed_at=observed,
            status=status,
            offer_count=offer_count,
            reject_count=len(rejects),
            error=error,
            source=source,
        )
        store_run(warehouse, row, result)
        progress(provider.NAME, status)
        return RunReport(
            provider=provider.NAME,
            run_id=run_id,
            status=status,
            offer_count=offer_count,
            reject_count=len(rejects),
            error=error,
            seconds=time.perf_counter() - started,
            observed_at=observed,
            rejects=list(rejects),
        )

    result = None
    failure: str | None = None
    try:
        progress(provider.NAME, "fetching")
        creds = _credentials(provider, env, replaying=replay is not None)
        client = _replay_client(replay.read_bytes()) if replay is not None else client_factory()
        with client:
            payload = provider.fetch(client, creds)
        progress(provider.NAME, "parsing")
        result = normalize(provider.parse(payload, observed), catalog)
    except ProviderError as exc:  # a fetch cancelled by a shutdown is abandoned below
        failure = failure_words(exc)
    except Exception as exc:  # the per-provider edge: a parser bug must not stop the others
        logger.exception("%s failed unexpectedly", provider.NAME)
        failure = failure_words(exc)
    if should_stop():
        logger.info(
            "run provider=%s status=abandoned (shutting down before its write)", provider.NAME
        )
        return None
    if failure is not None:
        return _logged(stored("failed", failure))
    return _logged(stored("ok", None, result))


def store_run(warehouse: Warehouse, run: RunRow, result: ParseResult | None) -> None:
    """Store one provider run whole, in one transaction: its row, offers and rejects in bulk."""
    offers = offers_to_table(result) if result is not None else None
    rejects = result.rejects if result is not None else []
    with warehouse.transaction() as conn:
        insert_run(
            conn,
            run,
            offers if offers is not None and offers.num_rows else None,
            rejects_to_table(rejects, run.observed_at) if rejects else None,
        )


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
) -> list[RunReport]:
    """Collect each named provider in turn; one transaction and one report per provider.

    A run whose `should_stop()` turns true before its write is abandoned: nothing is stored and
    it has no report.
    """
    modules = [provider_module(name) for name in names]
    replays = replays or {}
    for name in replays:
        provider_module(name)
    reports = (
        _collect_one(
            module,
            warehouse,
            now=now,
            observed_at=observed_at,
            replay=replays.get(module.NAME),
            env=os.environ if env is None else env,
            client_factory=client_factory,
            catalog=catalog or get_catalog(),
            progress=progress or (lambda _name, _stage: None),
            should_stop=should_stop,
        )
        for module in modules
    )
    return [report for report in reports if report is not None]
