"""The demo: a database of its own, filled from recorded provider answers shipped with the
package, so that a newcomer sees every part of the product with no provider reachable.

`fill_demo` replays each recorded answer (`pipeline/data/demo/<provider>.*`) once an hour over
the past `DEMO_HISTORY` (the chart has lines, the 24 h change a value), the last replay now, so
the offers are fresh. `demo_settings` makes `serve` keep replaying them on schedule (so they stay
fresh while it runs) and labels everything as demo data (`demo = true`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from pipeline.base import utc_now
from pipeline.collection.collect import RunReport
from pipeline.collection.runs import collect
from pipeline.settings import Settings
from scrapers import PROVIDERS
from warehouse import Warehouse

__all__ = [
    "DEMO_DB",
    "DEMO_DIR",
    "DEMO_HISTORY",
    "DEMO_STEP",
    "demo_bodies",
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


def demo_bodies(folder: Path = DEMO_DIR) -> dict[str, Path]:
    """The recorded answer of each provider in `folder`."""
    found = {path.name.split(".", 1)[0]: path for path in sorted(folder.iterdir())}
    return {name: path for name, path in found.items() if name in PROVIDERS}


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


def fill_demo(
    warehouse: Warehouse,
    settings: Settings,
    *,
    now: Callable[[], datetime] = utc_now,
    history: timedelta | None = None,
    step: timedelta = DEMO_STEP,
) -> list[RunReport]:
    """Replay every recorded answer at `step`s over the past `history` (`DEMO_HISTORY`), the
    last one now."""
    bodies = demo_bodies()
    end = now()
    count = int((history if history is not None else DEMO_HISTORY) / step)
    reports: list[RunReport] = []
    for back in range(count, -1, -1):
        at = end - step * back
        collected = collect(
            list(bodies), warehouse, settings, now=lambda at=at: at, observed_at=at,
            replays=bodies,
        )
        reports.extend(collected.reports)
    return reports
