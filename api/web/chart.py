"""The price-history chart as SVG geometry: drawn on the server, no chart library, no script.

One line per GPU × form factor × provider × pricing (SXM and PCIe never merged) over the cheapest
USD per GPU-hour among offers *available* in each bucket; the last point is the current snapshot's
cheapest available offer, the figure the offers table shows. A line breaks only where points are
further apart than a bucket plus 1.5 of the provider's own collection interval (it missed its
schedule) or where nothing was available: a provider collected every 6 h draws a line across
hourly buckets, not dots. Each unbroken run is its own `M ... L ...` subpath; a lone point is a
dot. Spot lines are dashed with square markers, on-demand solid with round ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "BUCKET",
    "Chart",
    "Line",
    "Marker",
    "NowPrice",
    "SeriesKey",
    "Tick",
    "build_chart",
    "price_axis",
    "price_ticks",
    "time_ticks",
]

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
SCHEDULE_SLACK = 1.5
"""A provider's points stay joined while they are at most a bucket plus this many of its
collection intervals apart: later than that, it missed a run."""

SeriesKey = tuple[str, str | None, str, str]
"""(gpu, form_factor, provider, pricing): one line."""


@dataclass(frozen=True, slots=True)
class NowPrice:
    """The current snapshot's cheapest available offer of one line."""

    price_per_gpu_hour: float
    observed_at: datetime


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
    form_factor: str | None
    color: str
    dashed: bool
    """Spot lines are dashed with square markers, on-demand lines solid with round ones."""
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


def price_axis(low: float, high: float) -> tuple[float, float, float, list[float]]:
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


def _time_labels(t0: datetime, t1: datetime) -> list[tuple[datetime, str]]:
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


def time_ticks(t0: datetime, t1: datetime, x: Callable[[datetime], float]) -> tuple[Tick, ...]:
    """The time axis's labels between t0 and t1, placed by `x` (viewBox units)."""
    return tuple(Tick(round(x(t), 1), label) for t, label in _time_labels(t0, t1))


def price_ticks(
    values: Sequence[float], step: float, y: Callable[[float], float]
) -> tuple[Tick, ...]:
    """The price axis's labels (`price_axis`'s values, `$2.50`), placed by `y`."""
    return tuple(Tick(round(y(v), 1), _money(v, step)) for v in values)


def _label(series: Mapping[str, Any], many_gpus: bool, many_forms: bool) -> str:
    pricing = PRICING_LABEL.get(series["pricing"], series["pricing"])
    parts = [series["gpu"]] if many_gpus else []
    if many_forms:
        parts.append(series.get("form_factor") or "form factor unknown")
    return " · ".join([*parts, series["provider"], pricing])


Point = Mapping[str, Any]


def _segments(points: Sequence[Point], joined: timedelta) -> list[list[Point]]:
    """Unbroken runs of points: two points further apart than `joined` start a new run."""
    runs: list[list[Point]] = []
    for point in points:
        if runs and point["t"] - runs[-1][-1]["t"] <= joined:
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
    if point.get("now"):
        return (
            f"{label}, now ({point['t']:%Y-%m-%d %H:%M} UTC): cheapest available "
            f"${point['price']:.2f} per GPU-hour"
        )
    return (
        f"{label}, {point['t']:%Y-%m-%d %H:%M} UTC: cheapest available ${point['price']:.2f}, "
        f"cheapest listed ${point['min']:.2f}, median ${point['median']:.2f}, "
        f"dearest ${point['max']:.2f} per GPU-hour ({point['available']} of {point['offers']} "
        "offers available)"
    )


def _key(series: Mapping[str, Any]) -> SeriesKey:
    return (series["gpu"], series.get("form_factor"), series["provider"], series["pricing"])


def _priced_series(
    history: Mapping[str, Any], now_prices: Mapping[SeriesKey, NowPrice]
) -> dict[SeriesKey, list[dict[str, Any]]]:
    """Each line's points with a `price` (available minimum), then its current price, if any."""
    lines: dict[SeriesKey, list[dict[str, Any]]] = {}
    for s in history["series"]:
        points = [
            {**p, "price": float(p["min_available"])}
            for p in s["points"]
            if p.get("min_available") is not None
        ]
        lines.setdefault(_key(s), []).extend(points)
    wanted = set(history.get("gpus") or [history["gpu"]])
    for key, now in now_prices.items():
        if key[0] not in wanted:
            continue
        points = [p for p in lines.get(key, []) if p["t"] < now.observed_at]
        points.append({"t": now.observed_at, "price": now.price_per_gpu_hour, "now": True})
        lines[key] = points
    return {key: points for key, points in lines.items() if points}


def build_chart(
    history: Mapping[str, Any],
    until: datetime,
    now_prices: Mapping[SeriesKey, NowPrice] | None = None,
    intervals: Mapping[str, timedelta] | None = None,
) -> Chart:
    """Geometry for `pipeline.market.history.price_history(...)`'s answer, x up to `until`.

    `now_prices` end each line at the current snapshot; `intervals` are the providers'
    collection intervals (a line breaks where a provider missed one).
    """
    step = BUCKET[history["interval"]]
    series = _priced_series(history, now_prices or {})
    left, top = float(LEFT_PX), float(TOP_PX)
    right, bottom = float(WIDTH_PX - RIGHT_PX), float(HEIGHT_PX - BOTTOM_PX)
    if not series:
        return Chart(WIDTH_PX, HEIGHT_PX, left, top, right, bottom, (), (), ())
    times = [p["t"] for points in series.values() for p in points]
    prices = [p["price"] for points in series.values() for p in points]
    t0 = min(times)
    t1 = max(max(times), until - step)
    if t1 <= t0:
        t0, t1 = t0 - step, t0 + step
    y0, y1, y_step, y_values = price_axis(min(prices), max(prices))

    def x(t: datetime) -> float:
        return left + float((t - t0) / (t1 - t0)) * (right - left)

    def y(price: float) -> float:
        return bottom - (price - y0) / (y1 - y0) * (bottom - top)

    providers = sorted({key[2] for key in series})
    many_gpus = len({key[0] for key in series}) > 1
    many_forms = len({key[1] for key in series}) > 1
    lines = []
    for key in sorted(series, key=lambda k: (k[0], k[1] or "", k[2], k[3])):
        gpu, form_factor, provider, pricing = key
        points = series[key]
        meta = {"gpu": gpu, "form_factor": form_factor, "provider": provider, "pricing": pricing}
        label = _label(meta, many_gpus, many_forms)
        joined = step + SCHEDULE_SLACK * (intervals or {}).get(provider, timedelta(0))
        runs = _segments(points, joined)
        path = " ".join(
            "M" + " L".join(f"{x(p['t']):.1f},{y(p['price']):.1f}" for p in run)
            for run in runs
            if len(run) > 1
        )
        values = [p["price"] for p in points]
        lines.append(
            Line(
                label=label,
                provider=provider,
                pricing=pricing,
                form_factor=form_factor,
                color=PALETTE[providers.index(provider) % len(PALETTE)],
                dashed=pricing == "spot",
                path=path,
                markers=tuple(
                    Marker(round(x(p["t"]), 1), round(y(p["price"]), 1), _title(label, p))
                    for p in _marked(runs)
                ),
                latest=values[-1],
                low=min(values),
                high=max(values),
                points=len(values),
                gaps=len(runs) - 1,
            )
        )
    x_ticks = time_ticks(t0, t1, x)
    y_ticks = price_ticks(y_values, y_step, y)
    return Chart(WIDTH_PX, HEIGHT_PX, left, top, right, bottom, tuple(lines), x_ticks, y_ticks)
