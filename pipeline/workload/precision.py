"""The precision a job trains in on a card: FP16 with loss scaling where the card has no BF16.

V100, T4 and the Turing and Pascal cards have no BF16 (the catalog's `bf16` column; their rows
carry only an FP16 figure). Mixed precision keeps FP32 master weights either way, so the fallback
changes the peak the hours use, not the memory (workload-model section 1). Pure-BF16 weights have
no such fallback (`workload.precision_problem`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.workload.fit import GpuType
    from pipeline.workload.model import Workload

__all__ = ["fp16_note", "lacks_bf16", "peak_tflops", "runs_in_fp16"]


def lacks_bf16(gpu: GpuType) -> bool:
    return not gpu.bf16_tflops and bool(gpu.fp16_tflops)


def runs_in_fp16(w: Workload, gpu: GpuType) -> bool:
    """A BF16 job on a card without BF16 trains in FP16 with loss scaling."""
    return w.precision == "bf16" and not w.pure_bf16 and lacks_bf16(gpu)


def fp16_note(gpu: GpuType) -> str:
    return f"precision fp16 with loss scaling: {gpu.id} has no BF16"


def peak_tflops(w: Workload, gpu: GpuType) -> float | None:
    """The dense peak `w` runs at on `gpu`, at the precision it runs in there."""
    bf16 = w.precision == "bf16" and not runs_in_fp16(w, gpu)
    return gpu.bf16_tflops if bf16 else gpu.fp16_tflops
