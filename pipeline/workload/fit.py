"""Whether a workload fits a GPU type: the layout it runs in on N GPUs, and the fewest GPUs.

The layouts are tried in the order a practitioner tries them, cheapest in communication first
(Answer.AI, "Benchmarking QLoRA+FSDP", fsdp_qlora `benchmarks_03_2024.md`, "Practical guide":
DDP → SHARD_GRAD_OP → FULL_SHARD → CPU offload), a mixture-of-experts model trying expert
parallelism right after DDP (the experts split, little else moved: ms-swift's Megatron examples);
the first that fits is the one the job is assumed to run in, and the time model
(`pipeline.workload.hours`) charges its communication. A workload that names its `layout` is tried
in that one only (on one GPU there is nothing to split).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache

from pipeline.catalog import GpuVariant
from pipeline.workload.model import (
    GPU_COUNTS,
    MAX_GPUS,
    USABLE_VRAM_FRACTION,
    MemoryEstimate,
    Workload,
    ZeroStage,
    estimate_memory,
)
from pipeline.workload.precision import lacks_bf16

__all__ = [
    "Fit",
    "GpuType",
    "Placement",
    "gpu_type",
    "has_flash_attention",
    "layouts",
    "min_gpus",
    "most_sharded",
    "place",
    "placement",
    "precision_problem",
    "software_problem",
    "usable_vram_gib",
]

Layout = tuple[ZeroStage, bool, bool]
"""(ZeRO stage, CPU offload, expert parallel); stage 0 is DDP (everything replicated)."""
SINGLE: Layout = (0, False, False)
EXPERT_PARALLEL: Layout = (0, False, True)
OFFLOADED: Layout = (3, True, False)
_ASKED: dict[str, Layout] = {
    "ddp": SINGLE,
    "zero2": (2, False, False),
    "zero3": (3, False, False),
    "fsdp": (3, False, False),
    "expert-parallel": EXPERT_PARALLEL,
}


@dataclass(frozen=True, slots=True)
class GpuType:
    """What the workload model needs of a GPU; build it from a catalog row with `gpu_type`."""

    id: str
    family: str
    vram_gb: float
    bf16_tflops: float | None
    fp16_tflops: float | None
    nvlink: bool
    flash_attention: bool = True
    devices_per_gpu: int = 1
    """MI250/MI250X appear to software as 2 GPUs of 64 GB each (section 5)."""
    mem_bw_gbps: float | None = None
    form_factor: str | None = None
    """SXM, PCIe or NVL when the catalog row says; None for cards that come in one form."""
    vendor: str = "NVIDIA"
    """The catalog's maker: NVIDIA runs the CUDA stack, AMD the ROCm one (`software_problem`)."""


NO_FLASH_ATTENTION = frozenset({"MI250", "MI250X"})  # section 4.3: AMD cards without it
"""AMD families without FlashAttention-2 kernels; NVIDIA cards are told by `has_flash_attention`."""


def has_flash_attention(variant: GpuVariant) -> bool:
    """Whether FlashAttention-2 runs on the card. On NVIDIA it needs Ampere or later (compute
    capability 8.0+; its README: "Ampere, Ada, or Hopper GPUs", Turing not supported), the
    generation that brought BF16 tensor cores: the catalog's `bf16` column marks exactly those
    cards, so V100, T4, the Quadro RTX and RTX 20 (Turing) and Pascal cards run without it."""
    if variant.vendor == "NVIDIA":
        return variant.bf16
    return variant.family not in NO_FLASH_ATTENTION


ROCM_ARCH: Mapping[str, str] = {
    **dict.fromkeys(("MI250", "MI250X"), "gfx90a"),  # CDNA2
    **dict.fromkeys(("MI300X", "MI325X"), "gfx942"),  # CDNA3
    **dict.fromkeys(("MI350X", "MI355X"), "gfx950"),  # CDNA4
}
"""The LLVM target of each AMD family (AMD's ROCm GPU specifications), which decides whether a
ROCm build of a kernel library runs on it."""
BITSANDBYTES_ROCM_TARGETS = frozenset({"gfx90a", "gfx942", "gfx950"})
"""The CDNA targets of bitsandbytes' ROCm wheels on PyPI (its installation guide, "AMD ROCm":
gfx90a and gfx942 from ROCm 6.4.4, gfx950 from 7.0.2; "all features are supported" there, so
its NF4 4-bit layers, which QLoRA needs, run on those cards)."""


def software_problem(w: Workload, gpu: GpuType) -> str | None:
    """Why the training software cannot run `w` on `gpu`. On AMD, Transformers and PEFT run on
    PyTorch's ROCm build (full and LoRA), but QLoRA also needs bitsandbytes' 4-bit kernels,
    built for some CDNA targets only (`BITSANDBYTES_ROCM_TARGETS`); other makers than NVIDIA
    and AMD are not modelled."""
    if gpu.vendor == "NVIDIA":
        return None
    if gpu.vendor != "AMD":
        return f"{gpu.id} ({gpu.vendor}): only the CUDA and ROCm training stacks are modelled"
    arch = ROCM_ARCH.get(gpu.family)
    if w.method == "qlora" and arch not in BITSANDBYTES_ROCM_TARGETS:
        built = ", ".join(sorted(BITSANDBYTES_ROCM_TARGETS))
        return (
            f"QLoRA needs bitsandbytes' 4-bit kernels, whose ROCm builds target {built}, "
            f"not {gpu.id} ({arch or 'architecture unknown'}); use method lora or full"
        )
    return None


TWO_DEVICE_GPUS = frozenset({"MI250", "MI250X"})  # section 5: 2 × 64 GB to software


@cache
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
        flash_attention=has_flash_attention(variant),
        devices_per_gpu=devices,
        mem_bw_gbps=variant.mem_bw_gbps / devices if variant.mem_bw_gbps else None,
        form_factor=str(variant.form_factor) if variant.form_factor else None,
        vendor=variant.vendor,
    )


def usable_vram_gib(gpu: GpuType) -> float:
    return USABLE_VRAM_FRACTION * gpu.vram_gb


def layouts(w: Workload, n_gpus: int, *, offload: bool = False) -> tuple[Layout, ...]:
    """The layouts to try on `n_gpus`, in order. Full fine-tuning adds ZeRO-2 (gradients and
    optimizer sharded, weights whole); for LoRA it would shard only the tiny adapter states.
    A MoE model tries expert parallelism after DDP. CPU offload, the slowest, only when asked
    for (and only where the weights are sharded). A workload's own `layout` is the only one."""
    if n_gpus == 1:
        return (SINGLE,)
    if w.layout != "auto":
        asked = _ASKED[w.layout]
        return (asked, OFFLOADED) if offload and asked[0] == 3 else (asked,)
    moe = (EXPERT_PARALLEL,) if w.arch.is_moe else ()
    if w.method == "full":
        ladder: tuple[Layout, ...] = (SINGLE, *moe, (2, False, False), (3, False, False))
    else:
        ladder = (SINGLE, *moe, (3, False, False))
    return (*ladder, OFFLOADED) if offload else ladder


def _memory(w: Workload, gpu: GpuType, n: int, layout: Layout) -> MemoryEstimate:
    stage, offload, expert_parallel = layout
    return estimate_memory(
        w,
        n,
        zero_stage=stage,
        offload=offload,
        flash_attention=gpu.flash_attention,
        expert_parallel=expert_parallel,
    )


def most_sharded(w: Workload, gpu: GpuType, n_gpus: int) -> MemoryEstimate:
    """The memory in the last layout tried without offload: the least a job needs on `n_gpus`
    (in the one asked for, when the workload names its layout)."""
    return _memory(w, gpu, n_gpus, layouts(w, n_gpus)[-1])


def place(
    w: Workload, gpu: GpuType, n_gpus: int, *, offload: bool = False
) -> MemoryEstimate | None:
    """The first layout that fits `n_gpus` × `gpu`, or None."""
    usable = usable_vram_gib(gpu)
    for layout in layouts(w, n_gpus, offload=offload):
        memory = _memory(w, gpu, n_gpus, layout)
        if memory.per_gpu_gib <= usable:
            return memory
    return None


@dataclass(frozen=True, slots=True)
class Placement:
    """How a job is timed on given hardware, fitting or not."""

    memory: MemoryEstimate
    """The memory of the layout the time model assumes."""
    fits: bool
    """The workload as stated fits in one of the layouts offers are ranked in (no offload)."""
    note: str | None = None
    """Why the timed layout differs from the workload as stated."""


def placement(w: Workload, gpu: GpuType, n_gpus: int) -> Placement:
    """The layout a hardware check times: the first that fits as stated; else with fused kernels
    (measured runs fit where the conservative hf profile says they do not); else with CPU
    offload; else the last layout tried, timed as if it fitted."""
    memory = place(w, gpu, n_gpus)
    if memory is not None:
        return Placement(memory, True)
    tries = [("fused kernels (profile fused)", replace(w, profile="fused"), False)]
    tries += [("CPU offload", w, True), ("fused kernels and CPU offload", tries[0][1], True)]
    for label, other, offload in tries:
        if label.startswith("fused") and w.profile == "fused":
            continue
        found = place(other, gpu, n_gpus, offload=offload)
        if found is not None:
            note = f"fits {n_gpus} × {gpu.id} only with {label}; timed in layout {found.layout}"
            return Placement(found, False, note)
    last = _memory(w, gpu, n_gpus, layouts(w, n_gpus, offload=True)[-1])
    note = f"does not fit {n_gpus} × {gpu.id} in any layout; timed as if it did ({last.layout})"
    return Placement(last, False, note)


@dataclass(frozen=True, slots=True)
class Fit:
    """The fewest GPUs of one type that hold the job, or why none do and what would help."""

    gpu: str
    n_gpus: int | None
    memory: MemoryEstimate
    """At `n_gpus` when it fits (in the first layout that does), else on as many as were tried."""
    usable_gib: float
    reason: str | None = None
    suggestions: tuple[str, ...] = field(default=())

    @property
    def feasible(self) -> bool:
        return self.n_gpus is not None

    @property
    def headroom(self) -> float:
        return 1 - self.memory.per_gpu_gib / self.usable_gib


def precision_problem(w: Workload, gpu: GpuType) -> str | None:
    """Why `gpu` cannot run `w` at its precision (pure-BF16 weights on a card without BF16) or
    with its software (`software_problem`: QLoRA on an AMD card bitsandbytes has no build for)."""
    if w.precision == "bf16" and w.pure_bf16 and lacks_bf16(gpu):
        return f"{gpu.id} has no BF16 for pure-BF16 weights; use precision fp16"
    return software_problem(w, gpu)


def _smallest_fit(w: Workload, gpu: GpuType, max_gpus: int) -> Fit:
    usable = usable_vram_gib(gpu)
    memory = _memory(w, gpu, 1, SINGLE)
    if memory.floor_gib > usable:
        reason = (
            f"activations and logits alone need {memory.floor_gib:.1f} GiB per GPU at seq_len "
            f"{w.seq_len}, micro_batch {w.micro_batch}; {gpu.id} has {usable:.1f} GiB usable"
        )
        return Fit(gpu.id, None, memory, usable, reason)
    if memory.per_gpu_gib <= usable:  # one GPU: a single layout
        return Fit(gpu.id, 1, memory, usable)
    # The most sharded layout needs the least memory: only where it fits can another. From two
    # GPUs on, that layout's memory per GPU only falls as N grows (its states are divided by N,
    # the rest stays), so the smallest N that fits is found by bisection: 8 estimates, not the
    # 130 of a walk up GPU_COUNTS (a ranking asks this for every GPU type and alternative).
    counts = [n for n in GPU_COUNTS[1:] if n <= max_gpus]

    def sharded(n: int) -> MemoryEstimate:
        return _memory(w, gpu, n, layouts(w, n)[-1])

    def fits(n: int) -> bool:
        return sharded(n).per_gpu_gib <= usable

    if w.arch.is_moe:
        # Expert parallel holds E / gcd(N, E) experts per GPU, not monotone in N, and may fit
        # where ZeRO-3 (whose gathered MoE layers are huge) does not: walk, trying every layout
        def fits_any(n: int) -> bool:
            return place(w, gpu, n) is not None

        first = next((i for i, n in enumerate(counts) if fits_any(n)), len(counts))
    else:
        first = bisect_left(counts, True, key=fits)
    if first < len(counts):
        n = counts[first]
        return Fit(gpu.id, n, place(w, gpu, n) or sharded(n), usable)
    memory = sharded(counts[-1]) if counts else memory
    asked = f" in layout {w.layout}" if w.layout != "auto" else ""
    reason = (
        f"needs {memory.per_gpu_gib:.1f} GiB per GPU{asked} even on {memory.n_gpus} × "
        f"{gpu.id} ({usable:.1f} GiB usable)"
    )
    if w.layout == "ddp":
        reason += "; ddp keeps a whole copy of the model states on every GPU"
    return Fit(gpu.id, None, memory, usable, reason)


def _alternatives(w: Workload) -> list[tuple[str, Workload]]:
    options: list[tuple[str, Workload]] = []
    if w.layout != "auto":
        options.append(("layout auto", replace(w, layout="auto")))
    if w.method == "qlora" and w.arch.is_moe and w.experts_bits == 16:
        options.append(("experts_bits 4", replace(w, experts_bits=4)))
    if not w.grad_ckpt:
        options.append(("turn on gradient checkpointing", replace(w, grad_ckpt=True)))
    if w.micro_batch > 1:
        options.append(("micro_batch 1 with gradient accumulation", replace(w, micro_batch=1)))
    if w.profile == "hf":
        options.append(
            ("profile fused (unsloth, Liger or torchtune kernels)", replace(w, profile="fused"))
        )
    if w.method == "full" and w.optimizer != "adamw_8bit":
        options.append(("optimizer adamw_8bit", replace(w, optimizer="adamw_8bit")))
    if w.method == "full":
        options.append(("method lora", replace(w, method="lora")))
    if w.method != "qlora":
        options.append(("method qlora", replace(w, method="qlora")))
    seq_len = w.seq_len // 2
    while seq_len >= 256:
        options.append((f"seq_len {seq_len}", replace(w, seq_len=seq_len)))
        seq_len //= 2
    return options


def min_gpus(w: Workload, gpu: GpuType, *, max_gpus: int = MAX_GPUS) -> Fit:
    """The smallest N in 1, 2, 4, 8, 16, … that fits in some layout (section 3.8), or why none
    does. An infeasible fit lists the single changes that would make it fit, each with its N.
    """
    fit = _smallest_fit(w, gpu, max_gpus)
    problem = precision_problem(w, gpu)
    if problem and problem == software_problem(w, gpu):  # QLoRA without bitsandbytes: LoRA
        lora = _smallest_fit(replace(w, method="lora"), gpu, max_gpus)
        lora_help = (f"method lora: {lora.n_gpus} × {gpu.id}",) if lora.n_gpus else ()
        return replace(fit, n_gpus=None, reason=problem, suggestions=lora_help)
    if problem:
        fp16 = (f"precision fp16: {fit.n_gpus} × {gpu.id}",) if fit.n_gpus else ()
        return replace(fit, n_gpus=None, reason=problem, suggestions=fp16)
    if fit.feasible:
        return fit
    helps: list[str] = []
    for label, alternative in _alternatives(w):
        other = _smallest_fit(alternative, gpu, max_gpus)
        if other.n_gpus is not None:
            helps.append(f"{label}: {other.n_gpus} × {gpu.id}")
            if label.startswith("seq_len"):
                break  # the longest sequence that fits is enough
    return replace(
        fit, suggestions=tuple(helps) or (f"a GPU with more than {fit.usable_gib:.0f} GiB",)
    )
