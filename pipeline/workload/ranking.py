"""FLOPs, hours and cost of a workload on an offer, and the ranking of offers by total cost.

Pure functions over the workload model (`pipeline.workload.model`) and offer rows as
`pipeline.market.offers.current_offers` returns them; constants cite
`docs/pages/notes/workload-model.md`.

    hours = T / tokens_per_s (`pipeline.workload.hours`)      cost = price per hour × hours

plus the offer's one-off setup fee (`setup_fee_usd`, Hetzner's dedicated servers), each month of
the job billed at most the offer's monthly cap (`price_per_month_usd`): `job_cost_usd`.

Each offer is timed in the first layout that fits it (`pipeline.workload.fit`) and on its own form
factor; an offer that does not say which form factor is timed on the faster one its GPU id
covers, with a range down to the slower, and a note.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.catalog import Catalog, GpuVariant
from pipeline.errors import WorkloadError
from pipeline.market.sellers import SOLD_CHEAPER_DIRECTLY, resold_dearer
from pipeline.workload.fit import (
    GpuType,
    gpu_type,
    min_gpus,
    place,
    precision_problem,
    usable_vram_gib,
)
from pipeline.workload.hours import HoursEstimate, hours_on_variants, moe_interconnect_note
from pipeline.workload.model import MAX_GPUS, Workload
from pipeline.workload.precision import fp16_note, peak_tflops, runs_in_fp16

__all__ = [
    "Quote",
    "Ranking",
    "Skipped",
    "job_cost_usd",
    "rank_offers",
]

HOURS_PER_MONTH = 730.0
"""A billing month: 365 × 24 / 12 h (Scaleway's monthly_price = hourly × 730, EU.md)."""


def job_cost_usd(offer: Mapping[str, Any], hours: float) -> float:
    """USD for `hours` on `offer`: hourly, each month capped at the monthly price when the offer
    has one, plus the one-off setup fee when it has one."""
    price = float(offer["price_per_hour"])
    cap = offer.get("price_per_month_usd")
    if cap is None:
        running = price * hours
    else:
        months, rest = divmod(hours, HOURS_PER_MONTH)
        running = months * float(cap) + min(rest * price, float(cap))
    return running + float(offer.get("setup_fee_usd") or 0.0)


SPOT_NOT_CHEAPER = "spot offer not below the same machine's on-demand price"
UNKNOWN_GPU = "GPU not in the catalog; its speed and memory are unknown"
INFINITY = float("inf")


SPOT_NOT_ASKED = "spot offer: interruptible, ranked only with include_spot (--include-spot)"
SPOT_RISK = (
    "spot: can be interrupted at any time; checkpoint often and expect restarts to add hours"
)


@dataclass(frozen=True, slots=True)
class Quote:
    offer: Mapping[str, Any]
    gpus: int
    hours: float
    hours_range: tuple[float, float]
    cost_usd: float
    cost_range_usd: tuple[float, float]
    memory_per_gpu_gib: float
    headroom: float
    """1 − memory per GPU / usable VRAM."""
    interruption_risk: str | None
    notes: tuple[str, ...]
    layout: str
    """The layout the memory and hours assume: ddp, zero2, zero3 (full), fsdp (LoRA), ..."""
    form_factor: str | None
    """The form factor the hours assume (the offer's own, else the faster variant)."""
    tokens_per_s: float
    utilization: float = 0.0
    """The share of the GPU's dense peak the hours assume."""
    hours_basis: str = ""
    """That utilization and the measured error behind `hours_range`, in words."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A group of offers that cannot run the job, for one reason."""

    gpu: str
    reason: str
    offers: int


@dataclass(frozen=True, slots=True)
class Ranking:
    quotes: list[Quote]
    skipped: list[Skipped]
    feasible: int
    """Offers that can run the job (`quotes` may hold only the top ones)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """The job on one (GPU id, form factor, GPU count): what every offer of that shape shares."""

    hours: HoursEstimate | None
    memory_gib: float
    headroom: float
    notes: tuple[str, ...]
    problem: str | None
    form_factor: str | None = None


class _Planner:
    def __init__(self, w: Workload, catalog: Catalog) -> None:
        self.w = w
        self.catalog = catalog
        self.plans: dict[tuple[str, Any, Any], _Plan] = {}
        self.minimums: dict[GpuType, str] = {}

    def variants(self, gpu_id: str, form_factor: str | None) -> list[GpuVariant]:
        """The offer's own form factor, or every variant of the id when it does not say."""
        variants = self.catalog.variants_of(gpu_id)
        exact = [v for v in variants if form_factor and str(v.form_factor) == form_factor]
        return exact or variants

    def plan(self, gpu_id: str, form_factor: Any, count: Any) -> _Plan:
        """The job on an offer's shape, kept by the offer's own values (one look-up an offer;
        they are read as a form factor name and a GPU count only when the plan is made)."""
        key = (gpu_id, form_factor, count)
        plan = self.plans.get(key)
        if plan is None:
            named = str(form_factor) if form_factor else None
            plan = self.plans[key] = self._plan(gpu_id, named, int(count))
        return plan

    def _needs(self, gpu: GpuType) -> str:
        if gpu not in self.minimums:
            fit = min_gpus(self.w, gpu)
            if fit.n_gpus is None:
                helps = f"; would fit with {'; '.join(fit.suggestions)}" if fit.suggestions else ""
                self.minimums[gpu] = f"does not fit on any number of {gpu.id}: {fit.reason}{helps}"
            else:
                count = -(-fit.n_gpus // gpu.devices_per_gpu)
                self.minimums[gpu] = f"too few GPUs: needs at least {count} × {gpu.id}"
        return self.minimums[gpu]

    def _plan(self, gpu_id: str, form_factor: str | None, count: int) -> _Plan:
        variants = self.variants(gpu_id, form_factor)
        if not variants:
            return _Plan(None, 0, 0, (), f"GPU '{gpu_id}' is not in the catalog")
        kinds = [gpu_type(v) for v in variants]
        gpu = kinds[0]
        problem = precision_problem(self.w, gpu)
        if problem:
            return _Plan(None, 0, 0, (), problem)
        if not peak_tflops(self.w, gpu):
            return _Plan(None, 0, 0, (), f"no published dense TFLOPs for {gpu.id}; hours unknown")
        n = count * gpu.devices_per_gpu
        if n > MAX_GPUS:
            return _Plan(None, 0, 0, (), f"more than {MAX_GPUS} GPUs are not modelled")
        memory = place(self.w, gpu, n)
        if memory is None:
            return _Plan(None, 0, 0, (), self._needs(gpu))
        hours, timed, notes = hours_on_variants(self.w, kinds, memory)
        if runs_in_fp16(self.w, gpu):
            notes = (*notes, fp16_note(gpu))
        if not gpu.flash_attention:
            notes = (*notes, f"no FlashAttention-2 on {gpu.id}: attention scores kept in memory")
        interconnect = moe_interconnect_note(self.w, gpu, n)
        if interconnect:
            notes = (*notes, interconnect)
        headroom = 1 - memory.per_gpu_gib / usable_vram_gib(gpu)
        return _Plan(hours, memory.per_gpu_gib, headroom, notes, None, timed.form_factor)


def rank_offers(
    w: Workload,
    offers: Iterable[Mapping[str, Any]],
    catalog: Catalog,
    *,
    include_spot: bool = False,
    max_hours: float | None = None,
    max_cost_usd: float | None = None,
    top: int | None = None,
) -> Ranking:
    """Offers that can run `w`, cheapest in total first (then fastest, then most headroom).

    Each offer's job uses all its GPUs (section 4.3). An aggregator's resale is left out when its
    seller's own offer of the same machine is as cheap (`pipeline.market.sellers`). Spot offers
    are ranked only when `include_spot`, each with its interruption risk; every offer left out is
    counted in a `Skipped` group with its reason. `w.tokens` must be set.
    """
    if w.tokens is None:
        raise WorkloadError("tokens", "needed to estimate hours and cost")
    planner = _Planner(w, catalog)
    offers = list(offers)
    on_demand = (
        {
            (o.get("provider"), o.get("offer_id")): o["price_per_hour"]  # one machine
            for o in offers
            if o.get("pricing") != "spot"
        }
        if include_spot
        else {}
    )
    skipped: Counter[tuple[str, str]] = Counter()
    ranked: list[tuple[float, float, float, int, Mapping[str, Any], _Plan]] = []
    resales = resold_dearer(offers)
    for index, offer in enumerate(offers):
        get = offer.get
        gpu_id = get("gpu")
        if gpu_id is None:
            skipped[(str(get("gpu_raw")), UNKNOWN_GPU)] += 1
            continue
        if index in resales:
            skipped[(gpu_id, SOLD_CHEAPER_DIRECTLY)] += 1
            continue
        if get("pricing") == "spot":
            if not include_spot:
                skipped[(gpu_id, SPOT_NOT_ASKED)] += 1
                continue
            machine = (get("provider"), get("offer_id"))
            if offer["price_per_hour"] >= on_demand.get(machine, INFINITY):
                skipped[(gpu_id, SPOT_NOT_CHEAPER)] += 1
                continue
        plan = planner.plan(gpu_id, get("form_factor"), offer["gpu_count"])
        hours = plan.hours
        if plan.problem is not None or hours is None:
            skipped[(gpu_id, plan.problem or "hours unknown")] += 1
            continue
        cost = job_cost_usd(offer, hours.hours)
        if max_hours is not None and hours.hours > max_hours:
            skipped[(gpu_id, f"over max_hours {max_hours:g}")] += 1
            continue
        if max_cost_usd is not None and cost > max_cost_usd:
            skipped[(gpu_id, f"over max_cost_usd {max_cost_usd:g}")] += 1
            continue
        ranked.append((cost, hours.hours, -plan.headroom, index, offer, plan))
    best = heapq.nsmallest(top, ranked) if top is not None else sorted(ranked)
    quotes = [_quote(offer, plan) for *_, offer, plan in best]
    groups = [Skipped(gpu, reason, count) for (gpu, reason), count in skipped.items()]
    groups.sort(key=lambda s: (-s.offers, s.gpu, s.reason))
    return Ranking(quotes, groups, len(ranked))


def _quote(offer: Mapping[str, Any], plan: _Plan) -> Quote:
    assert plan.hours is not None
    h = plan.hours
    return Quote(
        offer=offer,
        gpus=int(offer["gpu_count"]),
        hours=h.hours,
        hours_range=(h.low, h.high),
        cost_usd=job_cost_usd(offer, h.hours),
        cost_range_usd=(job_cost_usd(offer, h.low), job_cost_usd(offer, h.high)),
        memory_per_gpu_gib=plan.memory_gib,
        headroom=plan.headroom,
        interruption_risk=SPOT_RISK if offer.get("pricing") == "spot" else None,
        notes=plan.notes,
        layout=h.layout,
        form_factor=plan.form_factor,
        tokens_per_s=h.tokens_per_s,
        utilization=h.utilization,
        hours_basis=h.basis,
    )
