"""The page's first view: one row per GPU, for choosing where to fine-tune.

Each row is a GPU (SXM and PCIe apart) with its cheapest *available* on-demand and spot offer
per GPU-hour and who sells it, how many offers are rentable, and how the cheapest available price
moved over 24 hours and 7 days (on-demand; spot when a GPU has no on-demand offer). By default the
cheapest on-demand GPU-hour comes first, the order a buyer compares in (the quote above it on the
page already ranks by what the whole job costs on GPUs it fits); "Most VRAM" is one click away.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from api.web.offers_view import gpu_label

__all__ = [
    "CHANGE_SPANS",
    "GPU_SORTS",
    "Change",
    "Cheapest",
    "GpuRow",
    "GpuSort",
    "gpu_rows",
    "past_key",
    "sort_gpu_rows",
]

GpuSort = Literal["vram", "price", "spot"]
GPU_SORTS: Mapping[str, str] = {
    "price": "Cheapest on-demand",
    "spot": "Cheapest spot",
    "vram": "Most VRAM",
}
"""Orders of the first view (value -> link text); the first is the default."""
CHANGE_SPANS: Mapping[str, timedelta] = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}
"""How far back each change column looks."""

Key = tuple[str, str | None]
"""(GPU id, or the provider's name for a GPU the catalog lacks; form factor)."""


@dataclass(frozen=True, slots=True)
class Cheapest:
    price_per_gpu_hour: float
    provider: str
    offers: int
    """Available offers at this pricing."""


@dataclass(frozen=True, slots=True)
class Change:
    pricing: str
    then_per_gpu_hour: float
    now_per_gpu_hour: float

    @property
    def fraction(self) -> float:
        return self.now_per_gpu_hour / self.then_per_gpu_hour - 1.0


@dataclass(frozen=True, slots=True)
class GpuRow:
    gpu: str | None
    form_factor: str | None
    label: str
    vram_gb: float | None
    on_demand: Cheapest | None
    spot: Cheapest | None
    available_offers: int
    providers: tuple[str, ...]
    changes: Mapping[str, Change | None]
    """Per span of `CHANGE_SPANS`: None where the price then is unknown."""

    @property
    def headline(self) -> Cheapest:
        """The price the row is judged by: on-demand, else spot."""
        best = self.on_demand or self.spot
        assert best is not None  # a row exists only for a GPU with an available offer
        return best


def _key(row: Mapping[str, Any]) -> Key:
    return (row["gpu"] or row["gpu_raw"], row.get("form_factor"))


def past_key(row: Mapping[str, Any]) -> tuple[str, str | None, str]:
    """How a past price (`pipeline.market.history.cheapest_available_at` row) is looked up."""
    return (row["gpu"], row.get("form_factor"), row["pricing"])


def _count(rows: Sequence[Mapping[str, Any]]) -> int:
    """Offers `rows` stand for: each one, or a group's cheapest with its count (`offers`)."""
    return sum(r.get("offers", 1) for r in rows)


def _cheapest(rows: Sequence[Mapping[str, Any]]) -> Cheapest | None:
    if not rows:
        return None
    best = min(rows, key=lambda r: (r["price_per_gpu_hour"], r["provider"]))
    return Cheapest(float(best["price_per_gpu_hour"]), best["provider"], _count(rows))


def _change(
    now: Cheapest | None,
    pricing: str,
    gpu: str | None,
    form: str | None,
    past: Mapping[tuple[str, str | None, str], float],
) -> Change | None:
    # an uncatalogued GPU (no id) has no past prices: they are kept per catalog id
    then = past.get((gpu, form, pricing)) if now is not None and gpu is not None else None
    if now is None or then is None or then <= 0:
        return None
    return Change(pricing, float(then), now.price_per_gpu_hour)


def gpu_rows(
    offers: Iterable[Mapping[str, Any]],
    past: Mapping[str, Mapping[tuple[str, str | None, str], float]],
) -> list[GpuRow]:
    """One row per GPU over the *available* `offers`; `past[span]`: prices `span` ago. An offer
    may stand for a group (`pipeline.market.offer_groups.cheapest_per`: its `offers` and
    `max_vram_gb`)."""
    groups: dict[Key, list[Mapping[str, Any]]] = {}
    for row in offers:
        if row["available"]:
            groups.setdefault(_key(row), []).append(row)
    result = []
    for (_, form), rows in groups.items():
        on_demand = _cheapest([r for r in rows if r["pricing"] == "on_demand"])
        spot = _cheapest([r for r in rows if r["pricing"] == "spot"])
        gpu = rows[0]["gpu"]
        pricing, now = ("on_demand", on_demand) if on_demand else ("spot", spot)
        vram = [float(v) for r in rows if (v := r.get("max_vram_gb", r.get("vram_gb")))]
        result.append(
            GpuRow(
                gpu=gpu,
                form_factor=form,
                label=gpu_label(rows[0]),
                vram_gb=max(vram) if vram else None,
                on_demand=on_demand,
                spot=spot,
                available_offers=_count(rows),
                providers=tuple(sorted({r["provider"] for r in rows})),
                changes={
                    span: _change(now, pricing, gpu, form, past.get(span, {}))
                    for span in CHANGE_SPANS
                },
            )
        )
    return result


def _price(cheapest: Cheapest | None) -> tuple[int, float]:
    return (0, cheapest.price_per_gpu_hour) if cheapest else (1, 0.0)  # none: last


def sort_gpu_rows(rows: Sequence[GpuRow], order: str) -> list[GpuRow]:
    """`vram`: most memory first (unknown last), cheaper on-demand first among equals;
    `price` / `spot`: cheapest available on-demand / spot first, GPUs without one last."""
    if order == "spot":
        return sorted(rows, key=lambda r: (_price(r.spot), r.label))
    if order == "price":
        return sorted(rows, key=lambda r: (_price(r.on_demand), _price(r.spot), r.label))
    return sorted(
        rows,
        key=lambda r: (r.vram_gb is None, -(r.vram_gb or 0.0), r.headline.price_per_gpu_hour),
    )
