"""The demo: a database of its own, filled from recorded provider answers shipped with the
package, so that a newcomer sees every part of the product with no provider reachable.

`fill_demo` replays each recorded answer (`pipeline/data/demo/<provider>.*`, a file or a folder
of answers; every registered provider has one, the ECB's rates included) once an hour over the
past `DEMO_HISTORY`, the last replay now, so the offers are fresh.

The recordings are one answer each, so replayed alone every chart would be flat. The past replays
therefore move prices by a seeded random walk, one per provider and pricing (`demo_price_factor`):
going back from now, each hour multiplies the recorded prices by 1 ± up to `DEMO_STEP_PERCENT`
(spot moves more than on-demand), never further than `DEMO_MAX_PERCENT` from them. The last
replay is the recording itself, so the offers now are exactly the recorded ones. Made-up movement,
labelled like the rest: `demo_settings` marks everything as demo data (`demo = true`) and makes
`serve` keep replaying the recordings on schedule (so they stay fresh while it runs).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache, partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.base import utc_now
from pipeline.collection.collect import RateRow, RunReport
from pipeline.collection.runs import collect
from pipeline.settings import Settings
from scrapers import ParseResult, Pricing, sources
from warehouse import Warehouse

__all__ = [
    "DEMO_DB",
    "DEMO_DIR",
    "DEMO_HISTORY",
    "DEMO_MAX_PERCENT",
    "DEMO_SEED",
    "DEMO_STEP",
    "DEMO_STEP_PERCENT",
    "demo_bodies",
    "demo_price_factor",
    "demo_prices",
    "demo_rates",
    "demo_settings",
    "fill_demo",
]

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
"""Recorded answers, one per provider, named `<provider>.<ext>` (copies of tests/fixtures)."""
DEMO_DB = Path("data/demo.duckdb")
"""Never the real database: the demo's own file."""
DEMO_HISTORY = timedelta(days=2)
DEMO_STEP = timedelta(hours=1)
"""One replay an hour: hourly chart buckets join into lines."""
DEMO_SEED = 42
"""The seed of every demo price walk: the same demo each time it is built."""
DEMO_STEP_PERCENT: dict[str, float] = {Pricing.SPOT: 4.0, Pricing.ON_DEMAND: 1.0}
"""The most one hour moves a demo price, per pricing (spot markets move more)."""
DEMO_MAX_PERCENT = 20.0
"""The furthest a demo price strays from its recording."""
_PRICE_COLUMNS = ("price_per_hour", "price_per_gpu_hour")


@cache
def _walk(provider: str, pricing: str, hours: int) -> tuple[float, ...]:
    rng = random.Random(f"{DEMO_SEED}:{provider}:{pricing}")
    step = DEMO_STEP_PERCENT.get(pricing, DEMO_STEP_PERCENT[Pricing.ON_DEMAND]) / 100
    bound = DEMO_MAX_PERCENT / 100
    factors = [1.0]
    for _ in range(hours):
        moved = factors[-1] * (1 + rng.uniform(-step, step))
        factors.append(min(max(moved, 1 - bound), 1 + bound))
    return tuple(factors)


def demo_price_factor(provider: str, pricing: str, hours_ago: int) -> float:
    """What the demo multiplies `provider`'s recorded `pricing` prices by `hours_ago` hours
    before now (1.0 now): a seeded walk, the same for every build."""
    return _walk(provider, pricing, hours_ago)[hours_ago]


def demo_prices(provider: str, result: ParseResult, hours_ago: int) -> ParseResult:
    """`result` with its prices moved as the demo moves them `hours_ago` hours before now."""
    if hours_ago == 0 or result.offer_count == 0:
        return result
    table = result.table
    pricing = table["pricing"].to_pylist()
    factors = pa.array(
        [demo_price_factor(provider, str(p), hours_ago) for p in pricing], pa.float64()
    )
    for name in _PRICE_COLUMNS:
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, pc.multiply(table[name], factors))
    return ParseResult(table=table, rejects=result.rejects)


def demo_rates(rates: list[RateRow], observed_at: datetime) -> list[RateRow]:
    """The recorded exchange rates moved in time so that the newest is dated on the replay's day
    (each date shifted by the same days): a recording's rates would otherwise grow older than
    `MAX_RATE_AGE` within a week, and every euro-priced demo offer would be marked stale."""
    if not rates:
        return rates
    shift = observed_at.date() - max(rate_date for rate_date, _, _ in rates)
    return [(rate_date + shift, currency, rate) for rate_date, currency, rate in rates]


def demo_bodies(folder: Path = DEMO_DIR) -> dict[str, Path]:
    """The recorded answer of each provider in `folder`."""
    found = {path.name.split(".", 1)[0]: path for path in sorted(folder.iterdir())}
    return {name: path for name, path in found.items() if name in sources()}


def demo_settings(settings: Settings) -> Settings:
    """`settings` for serving the demo (over `settings.db`, never a lake): labelled demo,
    scheduled runs replaying the recorded answers (nothing is fetched), hourly collection
    intervals like the history's."""
    return settings.model_copy(
        update={
            "warehouse": None,
            "demo": True,
            "replay_dir": DEMO_DIR,
            "providers": list(demo_bodies()),
            "intervals": dict.fromkeys(demo_bodies(), DEMO_STEP),
            "jitter_s": 0,
        }
    )


def _clock(at: datetime) -> datetime:
    """The demo's run clock, stopped at `at` (the hour a past run pretends to be)."""
    return at


def fill_demo(
    warehouse: Warehouse,
    settings: Settings,
    *,
    now: Callable[[], datetime] = utc_now,
    history: timedelta | None = None,
    step: timedelta = DEMO_STEP,
) -> list[RunReport]:
    """Replay every recorded answer at `step`s over the past `history` (`DEMO_HISTORY`), the
    last one now, past prices moved by `demo_prices`."""
    bodies = demo_bodies()
    end = now()
    count = int((history if history is not None else DEMO_HISTORY) / step)
    reports: list[RunReport] = []
    for back in range(count, -1, -1):
        at = end - step * back
        hours_ago = int(step * back / timedelta(hours=1))
        collected = collect(
            list(bodies),
            warehouse,
            settings,
            now=partial(_clock, at),
            observed_at=at,
            replays=bodies,
            adjust=partial(demo_prices, hours_ago=hours_ago),
            adjust_rates=demo_rates,
        )
        reports.extend(collected.reports)
    return reports
