"""Rent now or wait: where the price index of one GPU sits against its last `days` days.

Definitions (README "Rent now or wait"), all over the index of `pipeline.market.index`:
- `now`: the latest hourly index value;
- `min`, `p10` … `p90`, `max`: over the daily index values of the window (linear interpolation
  between closest ranks); `percentile_now`: the share of those days at or below `now`, in %,
  null unless the days hold at least two different values (on a flat series every price is
  both the 0th and the 100th percentile: a rank says nothing);
- `movement`: `"none"` when every daily and hourly value of the window is the same price,
  `"moved"` otherwise, null without history;
- `availability`: the share of observed hours (hours with a good snapshot of any provider) in
  which the GPU had at least one available offer (an hourly index value), 0–1;
- `below`: per price, the share of observed hours with an hourly index value under it, 0–1;
- `volatility`: the sample standard deviation of the log changes between consecutive days;
- `cheapest_hour_utc`: the hour of day (0–23) whose hourly values have the lowest mean.

The window is the UTC day of `now` and the `days - 1` days before it. With less history than
that, every figure covers what there is and `history_days` says how many daily values it was.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from pipeline.catalog import Catalog
from pipeline.market.index import INDEX_SCOPE, METHODOLOGY, OUTSIDE_INDEX, one_gpu
from pipeline.market.scope import Name, OfferScope, split_names
from scrapers.models import Pricing
from warehouse import Warehouse
from warehouse import index as wi

__all__ = [
    "MARKET_SCOPE",
    "MarketQuery",
    "Movement",
    "market_outlook",
    "movement_of",
    "percentile_of",
    "quantile",
]

MARKET_SCOPE = INDEX_SCOPE
MAX_DAYS = 366
MAX_BELOW = 10
PRICE_DECIMALS = 2
"""Default `below` prices are the p10, median and p90 rounded to cents."""
PERCENT = 100.0
SAME_PRICE_USD = 1e-9
"""Prices closer than this are the same price (float noise from averaging, never a movement)."""

Movement = Literal["none", "moved"]
_QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9,
              "max": 1.0}  # fmt: skip
"""The figures of the daily values `/market` shows, each the quantile it is."""


def _prices(value: Any) -> tuple[float, ...]:
    """`"1.5,2"` or `["1.5", "2"]` -> `(1.5, 2.0)`; refused unless finite and zero or more."""
    try:
        prices = tuple(float(n) for n in split_names(value))
    except ValueError:
        raise ValueError(f"below takes prices like 1.5,2; got {value!r}") from None
    if any(not math.isfinite(p) or p < 0 for p in prices):
        raise ValueError("below prices must be finite and zero or more")
    return prices


Prices = Annotated[tuple[float, ...], BeforeValidator(_prices)]


class MarketQuery(OfferScope):
    """One GPU and pricing over the last `days` days."""

    gpu: Name = Field(description="One canonical GPU id or spelling")
    days: int = Field(30, ge=1, le=MAX_DAYS, description="Days of history to weigh now against")
    below: Prices = Field(
        (),
        max_length=MAX_BELOW,
        description="USD per GPU-hour prices, e.g. 1.5,2 (default: rounded p10, median, p90)",
    )


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), `ordered` ascending."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def movement_of(values: Sequence[float]) -> Movement | None:
    """`"none"` when every value is the same price, `"moved"` otherwise; None without values."""
    if not values:
        return None
    return "none" if max(values) - min(values) <= SAME_PRICE_USD else "moved"


def percentile_of(now: float | None, days: Sequence[float]) -> float | None:
    """The share of `days` at or below `now`, in %; None unless the days moved (at least two
    different values): against a flat series any price ranks 0th or 100th, which says nothing."""
    if now is None or movement_of(days) != "moved":
        return None
    return PERCENT * sum(v <= now + SAME_PRICE_USD for v in days) / len(days)


def _volatility(daily: list[tuple[datetime, float]]) -> float | None:
    changes = [
        math.log(v / previous)
        for (t_prev, previous), (t, v) in zip(daily, daily[1:], strict=False)
        if t - t_prev == timedelta(days=1) and previous > 0 and v > 0
    ]
    return statistics.stdev(changes) if len(changes) >= 2 else None


def _cheapest_hour(hourly: list[tuple[datetime, float]]) -> int | None:
    by_hour: dict[int, list[float]] = defaultdict(list)
    for t, value in hourly:
        by_hour[t.hour].append(value)
    if not by_hour:
        return None
    return min(by_hour, key=lambda hour: (statistics.fmean(by_hour[hour]), hour))


def market_outlook(
    warehouse: Warehouse, query: MarketQuery, now: datetime, catalog: Catalog | None = None
) -> dict[str, Any]:
    """The answer of `GET /market` (see the module docstring for each figure)."""
    query.check_honoured(MARKET_SCOPE, "the market view")
    gpu = one_gpu(query, catalog)
    pricing = str(query.pricing or Pricing.ON_DEMAND)
    since = wi.bucket_start(now, "1d") - timedelta(days=query.days - 1)
    until = now + timedelta(seconds=1)
    form_factor = str(query.form_factor) if query.form_factor else None

    def filters(interval: str) -> wi.IndexFilters:
        return wi.IndexFilters(
            frozenset({gpu}), (pricing,), interval, since, until, form_factor, OUTSIDE_INDEX
        )

    with warehouse.cursor() as cur:
        daily = [(p["t"], p["value"]) for p in wi.index_points(cur, filters("1d"))]
        hourly = [(p["t"], p["value"]) for p in wi.index_points(cur, filters("1h"))]
        observed_hours = wi.hours_with_snapshots(cur, since, until)
    values = sorted(v for _, v in daily)
    latest = hourly[-1][1] if hourly else None
    stats = {name: quantile(values, q) if values else None for name, q in _QUANTILES.items()}
    prices = query.below or tuple(
        sorted({round(v, PRICE_DECIMALS) for k in ("p10", "median", "p90") if (v := stats[k])})
    )
    return {
        "methodology": METHODOLOGY,
        "gpu": gpu,
        "pricing": pricing,
        "form_factor": form_factor,
        "days": query.days,
        "history_days": len(values),
        "since": since,
        "now": latest,
        **stats,
        "percentile_now": percentile_of(latest, values),
        "movement": movement_of(values + [v for _, v in hourly]),
        "availability": len(hourly) / observed_hours if observed_hours else None,
        "below": [
            {
                "price": price,
                "share": sum(v < price for _, v in hourly) / observed_hours
                if observed_hours
                else None,
            }
            for price in prices
        ],
        "volatility": _volatility(daily),
        "cheapest_hour_utc": _cheapest_hour(hourly),
    }
