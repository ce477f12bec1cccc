"""The page's price-index chart: one line per pricing (on-demand solid, spot dashed) of one GPU,
each point a link to the explanation of its value (`/index/explain`), on the same labelled axes
as the price-history chart ($ per GPU-hour up the side, UTC time along the bottom).

A line breaks where a bucket has no value (no provider contributed): a gap, never a zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from api.web.chart import (
    BUCKET,
    PALETTE,
    PRICING_LABEL,
    Tick,
    price_axis,
    price_ticks,
    time_ticks,
)

__all__ = ["IndexChart", "IndexLine", "IndexMarker", "build_index_chart"]

WIDTH_PX, HEIGHT_PX = 900, 300
LEFT_PX, RIGHT_PX, TOP_PX, BOTTOM_PX = 104, 24, 20, 50
"""As the price-history chart's, so both read alike and their labels have the same room."""
LATEST_ROWS = 7
"""Buckets listed in the table under the chart, newest first."""


@dataclass(frozen=True, slots=True)
class IndexMarker:
    x: float
    y: float
    title: str
    href: str


@dataclass(frozen=True, slots=True)
class IndexLine:
    pricing: str
    label: str
    color: str
    dashed: bool
    path: str
    markers: tuple[IndexMarker, ...]
    latest: float | None


@dataclass(frozen=True, slots=True)
class IndexChart:
    gpu: str
    interval: str
    width: int
    height: int
    low: float | None
    high: float | None
    lines: tuple[IndexLine, ...]
    rows: tuple[Mapping[str, Any], ...]
    """Latest buckets: `t`, then per pricing `value`, `providers` and `href`."""
    left: float
    right: float
    bottom: float
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    """Axis labels: UTC times along the bottom, $ per GPU-hour up the left."""


def _href(gpu: str, pricing: str, interval: str, t: datetime) -> str:
    query = {"gpu": gpu, "pricing": pricing, "interval": interval, "t": f"{t:%Y-%m-%dT%H:%M:%SZ}"}
    return f"/index/explain?{urlencode(query)}"


def build_index_chart(index: Mapping[str, Any]) -> IndexChart | None:
    """Geometry for `pipeline.market.index.index_series(...)` of one GPU; None without points."""
    series = [s for s in index["series"] if s["points"]]
    if not series:
        return None
    gpu, interval, step = series[0]["gpu"], index["interval"], BUCKET[index["interval"]]
    series = [s for s in series if s["gpu"] == gpu]  # a family: its first GPU with values
    times: list[datetime] = [p["t"] for s in series for p in s["points"]]
    values: list[float] = [p["value"] for s in series for p in s["points"]]
    t0, t1 = min(times), max(max(times), min(times) + step)
    low, high = min(values), max(values)
    y0, y1, y_step, y_values = price_axis(low, high)
    bottom = HEIGHT_PX - BOTTOM_PX

    def x(t: datetime) -> float:
        return round(LEFT_PX + (t - t0) / (t1 - t0) * (WIDTH_PX - LEFT_PX - RIGHT_PX), 1)

    def y(v: float) -> float:
        return round(bottom - (v - y0) / (y1 - y0) * (bottom - TOP_PX), 1)

    lines = []
    for n, s in enumerate(series):
        runs: list[list[dict[str, Any]]] = []
        for p in s["points"]:
            if runs and p["t"] - runs[-1][-1]["t"] <= step:
                runs[-1].append(p)
            else:
                runs.append([p])
        label = f"{gpu} {PRICING_LABEL.get(s['pricing'], s['pricing'])} index"
        lines.append(
            IndexLine(
                pricing=s["pricing"],
                label=label,
                color=PALETTE[n % len(PALETTE)],
                dashed=s["pricing"] == "spot",
                path=" ".join(
                    "M" + " L".join(f"{x(p['t'])},{y(p['value'])}" for p in run) for run in runs
                ),
                markers=tuple(
                    IndexMarker(
                        x(p["t"]),
                        y(p["value"]),
                        f"{label}, {p['t']:%Y-%m-%d %H:%M} UTC: ${p['value']:.2f} per GPU-hour, "
                        f"median of {p['providers']} provider(s); click to see each one",
                        _href(gpu, s["pricing"], interval, p["t"]),
                    )
                    for p in s["points"]
                ),
                latest=s["points"][-1]["value"],
            )
        )
    by_time: dict[datetime, dict[str, Any]] = {}
    for s in series:
        for p in s["points"]:
            row = by_time.setdefault(p["t"], {"t": p["t"]})
            row[s["pricing"]] = {**p, "href": _href(gpu, s["pricing"], interval, p["t"])}
    rows = tuple(by_time[t] for t in sorted(by_time, reverse=True)[:LATEST_ROWS])
    return IndexChart(
        gpu,
        interval,
        WIDTH_PX,
        HEIGHT_PX,
        low,
        high,
        tuple(lines),
        rows,
        left=LEFT_PX,
        right=WIDTH_PX - RIGHT_PX,
        bottom=bottom,
        x_ticks=time_ticks(t0, t1, x),
        y_ticks=price_ticks(y_values, y_step, y),
    )
