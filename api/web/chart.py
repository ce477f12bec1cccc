"""The price-history chart as SVG geometry: drawn on the server, no chart library, no script.

One line per GPU × provider × pricing over the cheapest USD per GPU-hour of each bucket. A
bucket with no good snapshot is absent from the history, and the line breaks there: a gap stays
a gap (each unbroken run is its own `M ... L ...` subpath; a lone point is drawn as a dot).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["BUCKET", "Chart", "Line", "Marker", "Tick", "build_chart"]

BUCKET: Mapping[str, timedelta] = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "1d": timedelta(days=1),
    "1w": timedelta(weeks=1),
}
"""Width of one history bucket; consecutive points further apart than this have a gap."""

WIDTH_PX = 900
HEIGHT_PX = 420
LEFT_PX, RIGHT_PX, TOP_PX, BOTTOM_PX = 104, 24, 20, 50
"""Room for the y labels (left) and the x labels (below) inside the SVG viewBox."""
Y_TICKS = 5
X_TICKS = 6
"""At most this many time labels."""
X_STEPS = (
    *(timedelta(hours=h) for h in (1, 2, 3, 6, 12)),
    *(timedelta(days=d) for d in (1, 2, 7, 14, 28, 91, 182, 364)),
)
"""Candidate spacings of the time labels, smallest first."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_MARKERS = 96
"""Past this many points a line gets dots only where a run starts or ends (or stands alone)."""
Y_PAD = 0.08
"""Share of the price range left empty above and below the lines."""

PALETTE = ("#0b5cad", "#c2410c", "#047857", "#7e22ce", "#9f1239", "#4d5b00", "#0e7490")
"""Line colours by provider: each has at least 4.5:1 contrast on white (WCAG 1.4.11 needs 3:1)."""
PRICING_LABEL = {"on_demand": "on-demand", "spot": "spot"}


@dataclass(frozen=True, slots=True)
class Tick:
    pos: float
    label: str


@dataclass(frozen=True, slots=True)
class Marker:
    x: float
    y: float
    title: str


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    provider: str
    pricing: str
    color: str
    dashed: bool
    """Spot lines are dashed, on-demand lines solid."""
    path: str
    markers: tuple[Marker, ...]
    latest: float
    low: float
    high: float
    points: int
    gaps: int


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    lines: tuple[Line, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]

    @property
    def empty(self) -> bool:
        return not self.lines


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count - 1, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw)


def _y_axis(low: float, high: float) -> tuple[float, float, float, list[float]]:
    """(bottom, top, step, tick values) around [low, high]; prices are never negative."""
    span = high - low
    pad = span * Y_PAD if span > 0 else max(abs(high) * 0.1, 0.01)
    lo, hi = max(low - pad, 0.0), high + pad
    step = _nice_step(hi - lo, Y_TICKS)
    start = math.floor(lo / step) * step
    end = math.ceil(hi / step) * step
    return start, end, step, [start + i * step for i in range(round((end - start) / step) + 1)]


def _money(value: float, step: float) -> str:
    decimals = min(max(2, -math.floor(math.log10(step)) if step > 0 else 2), 4)
    return f"${value:.{decimals}f}"


def _x_ticks(t0: datetime, t1: datetime) -> list[tuple[datetime, str]]:
    """Round UTC times between t0 and t1: hours (midnight shown as the date), days or months."""
    step = next((c for c in X_STEPS if (t1 - t0) / c <= X_TICKS), X_STEPS[-1])
    first = EPOCH + math.ceil((t0 - EPOCH) / step) * step
    ticks = []
    t = first
    while t <= t1:
        if step >= timedelta(days=90):
            label = f"{t:%b %Y}"
        elif step >= timedelta(days=1) or (t.hour, t.minute) == (0, 0):
            label = f"{t:%d %b}"
        else:
            label = f"{t:%H:%M}"
        ticks.append((t, label))
        t += step
    return ticks


def _label(series: Mapping[str, Any], many_gpus: bool) -> str:
    pricing = PRICING_LABEL.get(series["pricing"], series["pricing"])
    prefix = f"{series['gpu']} · " if many_gpus else ""
    return f"{prefix}{series['provider']} · {pricing}"


Point = Mapping[str, Any]


def _segments(points: Sequence[Point], step: timedelta) -> list[list[Point]]:
    """Unbroken runs of points: a missing bucket between two points starts a new run."""
    runs: list[list[Point]] = []
    for point in points:
        if runs and point["t"] - runs[-1][-1]["t"] <= step:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def _marked(runs: Sequence[Sequence[Point]]) -> list[Point]:
    points = [p for run in runs for p in run]
    if len(points) <= MAX_MARKERS:
        return points
    return [p for run in runs for p in ((run[0],) if len(run) == 1 else (run[0], run[-1]))]


def _title(label: str, point: Mapping[str, Any]) -> str:
    return (
        f"{label}, {point['t']:%Y-%m-%d %H:%M} UTC: cheapest ${point['min']:.2f}, "
        f"median ${point['median']:.2f}, dearest ${point['max']:.2f} per GPU-hour "
        f"({point['offers']} offers)"
    )


def build_chart(history: Mapping[str, Any], until: datetime) -> Chart:
    """Geometry for `pipeline.market.history.price_history(...)`'s answer, x up to `until`."""
    step = BUCKET[history["interval"]]
    series = [s for s in history["series"] if s["points"]]
    left, top = float(LEFT_PX), float(TOP_PX)
    right, bottom = float(WIDTH_PX - RIGHT_PX), float(HEIGHT_PX - BOTTOM_PX)
    if not series:
        return Chart(WIDTH_PX, HEIGHT_PX, left, top, right, bottom, (), (), ())
    times = [p["t"] for s in series for p in s["points"]]
    prices = [float(p["min"]) for s in series for p in s["points"]]
    t0 = min(times)
    t1 = max(max(times), until - step)
    if t1 <= t0:
        t0, t1 = t0 - step, t0 + step
    y0, y1, y_step, y_values = _y_axis(min(prices), max(prices))

    def x(t: datetime) -> float:
        return left + float((t - t0) / (t1 - t0)) * (right - left)

    def y(price: float) -> float:
        return bottom - (price - y0) / (y1 - y0) * (bottom - top)

    providers = sorted({s["provider"] for s in series})
    many_gpus = len({s["gpu"] for s in series}) > 1
    lines = []
    for s in sorted(series, key=lambda s: (s["gpu"], s["provider"], s["pricing"])):
        label = _label(s, many_gpus)
        runs = _segments(s["points"], step)
        path = " ".join(
            "M" + " L".join(f"{x(p['t']):.1f},{y(float(p['min'])):.1f}" for p in run)
            for run in runs
            if len(run) > 1
        )
        mins = [float(p["min"]) for p in s["points"]]
        lines.append(
            Line(
                label=label,
                provider=s["provider"],
                pricing=s["pricing"],
                color=PALETTE[providers.index(s["provider"]) % len(PALETTE)],
                dashed=s["pricing"] == "spot",
                path=path,
                markers=tuple(
                    Marker(round(x(p["t"]), 1), round(y(float(p["min"])), 1), _title(label, p))
                    for p in _marked(runs)
                ),
                latest=mins[-1],
                low=min(mins),
                high=max(mins),
                points=len(mins),
                gaps=len(runs) - 1,
            )
        )
    x_ticks = tuple(Tick(round(x(t), 1), label) for t, label in _x_ticks(t0, t1))
    y_ticks = tuple(Tick(round(y(v), 1), _money(v, y_step)) for v in y_values)
    return Chart(WIDTH_PX, HEIGHT_PX, left, top, right, bottom, tuple(lines), x_ticks, y_ticks)
