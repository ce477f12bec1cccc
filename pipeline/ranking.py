"""FLOPs, hours and cost of a workload on an offer, and the ranking of offers by total cost.

Pure functions over the workload model (`pipeline.workload`) and offer rows as
`pipeline.offers.current_offers` returns them; constants cite `shared/reference/workload-model.md`.

    hours = T · F_tok / (N · peak · U · η_N) / 3600 + t_fixed      cost = price per hour × hours
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.catalog import Catalog, GpuVariant
from pipeline.errors import WorkloadError
from pipeline.workload import (
    GPU_COUNTS,
    GpuType,
    Workload,
    estimate_memory,
    min_gpus,
    precision_problem,
    usable_vram_gib,
)

__all__ = [
    "BAND",
    "HoursEstimate",
    "Quote",
    "Ranking",
    "Skipped",
    "estimate_hours",
    "flops_per_token",
    "gpu_type",
    "rank_offers",
]

# Section 4.1 (Kaplan et al. arXiv:2001.08361; Transformer Math): FLOPs per token.
FULL_FLOPS_PER_PARAM = 6  # forward 2 + backward 4
FROZEN_FLOPS_PER_PARAM = 4  # LoRA/QLoRA: frozen weights need no weight-gradient matmul
RECOMPUTE_FLOPS_PER_PARAM = 2  # checkpointing: one extra forward
ATTENTION_FLOPS = 6  # causal FlashAttention training: 6·L·s·h per token
ATTENTION_RECOMPUTE_FLOPS = 2  # + 2·L·s·h when recomputed

# Section 4.2: hardware FLOP utilization U by GPU family (of the dense BF16/FP16 peak).
UTILIZATION: Mapping[str, float] = {
    "A100": 0.45,
    **dict.fromkeys(("H100", "H200", "GH200"), 0.38),
    "B200": 0.30,  # provisional: software still maturing
    **dict.fromkeys(("RTX 4090", "RTX 5090", "RTX 3090"), 0.45),  # of the FP32-accumulate peak
    **dict.fromkeys(("V100", "T4"), 0.25),  # fp16, no FlashAttention-2
    **dict.fromkeys(("MI300X", "MI250", "MI250X"), 0.30),  # ROCm; low confidence
}
DEFAULT_UTILIZATION = 0.40
"""The section 4.2 row for L40S, L40, RTX 6000 Ada, A6000, A40, A10, L4, RTX A4000/A5000 and
RTX PRO 6000; also used for pro cards the table does not list (RTX 4000 Ada)."""
QLORA_UTILIZATION_FACTOR = 0.8  # dequantization costs (section 4.2)
# Section 4.2: multi-GPU efficiency η_N.
ETA_DDP_NVLINK = 0.95  # DDP / LoRA within an NVLink node
ETA_SHARDED_NVLINK = 0.90  # ZeRO-3 / FSDP within an NVLink/NVSwitch node
ETA_SHARDED_PCIE = 0.75  # ZeRO-3 over PCIe (nvlink "no" or "bridge")
ETA_MULTI_NODE = 0.80  # across nodes
GPUS_PER_NODE = 8  # section 3.8: more than 8 GPUs means a multi-node offer
FIXED_HOURS = 0.1
"""t_fixed, the low end of section 4.2's 0.1–0.25 h (download, load, eval, checkpoint saves)."""
BAND = 0.30
"""±30% on hours and cost (section 4.3; U alone is uncertain by 30–50%, section 7.6)."""
NO_FLASH_ATTENTION = frozenset({"V100", "T4", "MI250", "MI250X"})  # section 4.3
TWO_DEVICE_GPUS = frozenset({"MI250", "MI250X"})  # section 5: 2 × 64 GB to software
SECONDS_PER_HOUR = 3600
TFLOPS = 1e12
SPOT_NOT_CHEAPER = "spot offer not below the same machine's on-demand price"


def _machine(offer: Mapping[str, Any]) -> tuple[object, object]:
    return offer.get("provider"), offer.get("offer_id")


SPOT_NOT_ASKED = "spot offer: interruptible, ranked only with include_spot (--include-spot)"
SPOT_RISK = (
    "spot: can be interrupted at any time; checkpoint often and expect restarts to add hours"
)


def flops_per_token(w: Workload) -> float:
    """F_tok = c·P + 6·P_lora·[LoRA] + 6·L·s·h + 2·L·s·h·[ckpt] (section 4.1)."""
    a = w.arch
    c = FULL_FLOPS_PER_PARAM if w.method == "full" else FROZEN_FLOPS_PER_PARAM
    attention = ATTENTION_FLOPS * a.layers * w.seq_len * a.hidden
    if w.grad_ckpt:
        c += RECOMPUTE_FLOPS_PER_PARAM
        attention += ATTENTION_RECOMPUTE_FLOPS * a.layers * w.seq_len * a.hidden
    adapters = 0.0 if w.method == "full" else FULL_FLOPS_PER_PARAM * a.lora_params(w.lora_rank)
    return c * a.params + adapters + attention


def gpu_type(variant: GpuVariant) -> GpuType:
    """The model's view of one catalog row (an MI250 becomes two 64 GB devices)."""
    devices = 2 if variant.family in TWO_DEVICE_GPUS else 1
    return GpuType(
        id=variant.id,
        family=variant.family,
        vram_gb=variant.vram_gb / devices,
        bf16_tflops=variant.bf16_tflops_dense / devices if variant.bf16_tflops_dense else None,
        fp16_tflops=variant.fp16_tflops_dense / devices if variant.fp16_tflops_dense else None,
        nvlink=variant.nvlink in ("yes", "xgmi"),
        flash_attention=variant.family not in NO_FLASH_ATTENTION,
        devices_per_gpu=devices,
    )


def _efficiency(w: Workload, gpu: GpuType, n: int) -> float:
    if n == 1:
        return 1.0
    if n > GPUS_PER_NODE * gpu.devices_per_gpu:
        return ETA_MULTI_NODE
    if not gpu.nvlink:
        return ETA_SHARDED_PCIE
    return ETA_SHARDED_NVLINK if w.method == "full" else ETA_DDP_NVLINK


@dataclass(frozen=True, slots=True)
class HoursEstimate:
    hours: float
    low: float
    high: float
    utilization: float
    efficiency: float


def estimate_hours(w: Workload, gpu: GpuType, n: int) -> HoursEstimate | None:
    """Wall hours on `n` GPUs (devices) of `gpu`; None without tokens or a published peak."""
    peak = gpu.bf16_tflops if w.precision == "bf16" else gpu.fp16_tflops
    if w.tokens is None or not peak:
        return None
    u = UTILIZATION.get(gpu.family, DEFAULT_UTILIZATION)
    if w.method == "qlora":
        u *= QLORA_UTILIZATION_FACTOR
    eta = _efficiency(w, gpu, n)
    seconds = w.tokens * flops_per_token(w) / (n * peak * TFLOPS * u * eta)
    hours = seconds / SECONDS_PER_HOUR + FIXED_HOURS
    return HoursEstimate(hours, hours * (1 - BAND), hours * (1 + BAND), u, eta)


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
    """The job on one (GPU variant, GPU count): what every offer of that shape shares."""

    hours: HoursEstimate | None
    memory_gib: float
    headroom: float
    notes: tuple[str, ...]
    problem: str | None


class _Planner:
    def __init__(self, w: Workload, catalog: Catalog) -> None:
        self.w = w
        self.catalog = catalog
        self.plans: dict[tuple[str, str | None, int], _Plan] = {}
        self.minimums: dict[GpuType, str] = {}

    def variant(
        self, gpu_id: str, form_factor: str | None
    ) -> tuple[GpuVariant | None, tuple[str, ...]]:
        variants = self.catalog.variants_of(gpu_id)
        exact = [v for v in variants if form_factor and str(v.form_factor) == form_factor]
        if exact or len(variants) == 1:
            return (exact or variants)[0], ()
        if not variants:
            return None, ()
        # Section 4.3: an ambiguous name takes the conservative (slowest) variant, flagged.
        slowest = min(
            variants,
            key=lambda v: (v.bf16_tflops_dense or 0, v.fp16_tflops_dense or 0, v.nvlink == "yes"),
        )
        note = f"form factor not given; assumed {slowest.form_factor or 'the slowest variant'}"
        return slowest, (note,)

    def plan(self, gpu_id: str, form_factor: str | None, count: int) -> _Plan:
        key = (gpu_id, form_factor, count)
        if key not in self.plans:
            self.plans[key] = self._plan(gpu_id, form_factor, count)
        return self.plans[key]

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
        variant, notes = self.variant(gpu_id, form_factor)
        if variant is None:
            return _Plan(None, 0, 0, (), f"GPU '{gpu_id}' is not in the catalog")
        gpu = gpu_type(variant)
        problem = precision_problem(self.w, gpu)
        if problem:
            return _Plan(None, 0, 0, (), problem)
        if not (gpu.bf16_tflops if self.w.precision == "bf16" else gpu.fp16_tflops):
            return _Plan(None, 0, 0, (), f"no published dense TFLOPs for {gpu.id}; hours unknown")
        n = count * gpu.devices_per_gpu
        if n > max(GPU_COUNTS):
            return _Plan(None, 0, 0, (), f"more than {max(GPU_COUNTS)} GPUs are not modelled")
        memory = estimate_memory(self.w, n, flash_attention=gpu.flash_attention)
        usable = usable_vram_gib(gpu)
        if memory.per_gpu_gib > usable:
            return _Plan(None, memory.per_gpu_gib, 0, (), self._needs(gpu))
        if not gpu.flash_attention:
            notes = (*notes, f"no FlashAttention-2 on {gpu.id}: attention scores kept in memory")
        hours = estimate_hours(self.w, gpu, n)
        return _Plan(hours, memory.per_gpu_gib, 1 - memory.per_gpu_gib / usable, notes, None)


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

    Each offer's job uses all its GPUs (section 4.3). Spot offers are ranked only when
    `include_spot`, each with its interruption risk; every offer left out is counted in a
    `Skipped` group with its reason. `w.tokens` must be set.
    """
    if w.tokens is None:
        raise WorkloadError("tokens", "needed to estimate hours and cost")
    planner = _Planner(w, catalog)
    offers = list(offers)
    on_demand = {_machine(o): o["price_per_hour"] for o in offers if o.get("pricing") != "spot"}
    skipped: Counter[tuple[str, str]] = Counter()
    ranked: list[tuple[float, float, float, int, Mapping[str, Any], _Plan]] = []
    for index, offer in enumerate(offers):
        gpu_id = offer.get("gpu")
        if gpu_id is None:
            skipped[
                (
                    str(offer.get("gpu_raw")),
                    "GPU not in the catalog; its speed and memory are unknown",
                )
            ] += 1
            continue
        if offer.get("pricing") == "spot" and not include_spot:
            skipped[(gpu_id, SPOT_NOT_ASKED)] += 1
            continue
        if offer.get("pricing") == "spot" and offer["price_per_hour"] >= on_demand.get(
            _machine(offer), float("inf")
        ):
            skipped[(gpu_id, SPOT_NOT_CHEAPER)] += 1
            continue
        form_factor = offer.get("form_factor")
        plan = planner.plan(
            gpu_id, str(form_factor) if form_factor else None, int(offer["gpu_count"])
        )
        if plan.problem is not None or plan.hours is None:
            skipped[(gpu_id, plan.problem or "hours unknown")] += 1
            continue
        cost = float(offer["price_per_hour"]) * plan.hours.hours
        if max_hours is not None and plan.hours.hours > max_hours:
            skipped[(gpu_id, f"over max_hours {max_hours:g}")] += 1
            continue
        if max_cost_usd is not None and cost > max_cost_usd:
            skipped[(gpu_id, f"over max_cost_usd {max_cost_usd:g}")] += 1
            continue
        ranked.append((cost, plan.hours.hours, -plan.headroom, index, offer, plan))
    best = heapq.nsmallest(top, ranked) if top is not None else sorted(ranked)
    quotes = [_quote(offer, plan) for *_, offer, plan in best]
    groups = [Skipped(gpu, reason, count) for (gpu, reason), count in skipped.items()]
    groups.sort(key=lambda s: (-s.offers, s.gpu, s.reason))
    return Ranking(quotes, groups, len(ranked))


def _quote(offer: Mapping[str, Any], plan: _Plan) -> Quote:
    assert plan.hours is not None
    price = float(offer["price_per_hour"])
    h = plan.hours
    return Quote(
        offer=offer,
        gpus=int(offer["gpu_count"]),
        hours=h.hours,
        hours_range=(h.low, h.high),
        cost_usd=price * h.hours,
        cost_range_usd=(price * h.low, price * h.high),
        memory_per_gpu_gib=plan.memory_gib,
        headroom=plan.headroom,
        interruption_risk=SPOT_RISK if offer.get("pricing") == "spot" else None,
        notes=plan.notes,
    )
