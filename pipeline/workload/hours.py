"""How long a fine-tuning job runs on N GPUs in a given layout: a small step-time model.

Pure functions; every constant names its source or the measured runs it was fitted on
(`tests/fixtures/throughput_cases.csv`, copied from the public tables it cites). One GPU's
micro-step (b sequences of s tokens) takes

    t_gpu  = b·s·F_tok / (peak · U_gen)            matmuls at the generation's utilisation
           + L · τ_layer                            kernel launches, per layer per micro-step
           + [QLoRA] passes · P_lin · β_dq / BW_mem  dequantising the NF4 base each pass
           + [LoRA]  b·s · passes · L · Σ(d_in+d_out) · β_ad / BW_mem   adapter traffic
           + [no FlashAttention] b·s · s · heads · L · passes · β_sc / BW_mem
    t_comm = bytes of the layout / interconnect bandwidth (+ host link and CPU Adam if offloaded)
    t_step = max(t_gpu, t_comm) + ε · min(t_gpu, t_comm) + t_cpu_adam
    tokens/s = N · b · s / t_step      hours = T / tokens/s / 3600

F_tok counts recompute (workload-model.md section 4.1), so U_gen is a hardware FLOP utilisation.
Communication per micro-step follows the ZeRO paper (arXiv:1910.02054, section 7): DDP, ZeRO-1
and ZeRO-2 move 2Ψ (gradients all-reduced), ZeRO-3 / FSDP 3Ψ (weights gathered for forward and
backward, gradients reduce-scattered); for LoRA, Ψ of the frozen base is gathered and only the
adapters' gradients are reduced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pipeline.workload.fit import GpuType
from pipeline.workload.model import (
    BYTES_16BIT,
    MemoryEstimate,
    Workload,
    base_weight_bytes,
    expert_bytes_per_param,
    expert_parallel_size,
    quantized_params,
)
from pipeline.workload.precision import peak_tflops

__all__ = [
    "FRAMEWORK_SPEEDUP",
    "FRAMEWORK_SLOWDOWN",
    "PADDING_SLOWDOWN",
    "SETUP_HOURS",
    "HoursEstimate",
    "estimate_hours",
    "MEASURED_ERROR",
    "flops_per_token",
    "hours_basis",
    "moe_interconnect_note",
    "hours_on_variants",
    "tokens_per_second",
]

# Section 4.1 (Kaplan et al. arXiv:2001.08361; Transformer Math): FLOPs per token.
FULL_FLOPS_PER_PARAM = 6  # forward 2 + backward 4
FROZEN_FLOPS_PER_PARAM = 4  # LoRA/QLoRA: frozen weights need no weight-gradient matmul
RECOMPUTE_FLOPS_PER_PARAM = 2  # checkpointing: one extra forward
ATTENTION_FLOPS = 6  # causal FlashAttention training: 6·L·s·h per token
ATTENTION_RECOMPUTE_FLOPS = 2  # + 2·L·s·h when recomputed

UTILIZATION: Mapping[str, float] = {
    # U_gen, of the dense BF16/FP16 peak, counting recompute. A100: llm-foundry's 8×A100 MPT
    # rows (implied 0.58-0.72) and Qwen's A100 rows, once launch overhead and dequantisation
    # are apart; Transformer Math: 150-180 TFLOP/s on A100 (0.48-0.58).
    "A100": 0.62,
    # Hopper: llm-foundry's 8×H100 rows (0.45-0.52), Llama 3 paper (0.38-0.43 at scale).
    **dict.fromkeys(("H100", "H200", "GH200"), 0.48),
    "B200": 0.35,  # provisional (workload-model.md section 4.2: software still maturing)
    # GeForce, of the FP32-accumulate peak: Answer.AI's 2×4090 / 2×3090 QLoRA runs (implied
    # 0.6-0.7 before overheads); torchtune's compiled 4090 rows run higher still.
    **dict.fromkeys(("RTX 4090", "RTX 5090", "RTX 3090"), 0.72),
    **dict.fromkeys(("V100", "T4"), 0.30),  # fp16, no FlashAttention-2 (section 4.2: 0.25)
    **dict.fromkeys(("MI250", "MI250X", "MI300X", "MI325X", "MI350X", "MI355X"), 0.35),  # ROCm
    # (low confidence: no measured fine-tuning run fitted on any of them)
}
DEFAULT_UTILIZATION = 0.48
"""Pro and data-centre PCIe cards (L40S, L4, A10, A40, RTX A6000, RTX 6000 Ada, ...): between
section 4.2's 0.40 for them and the A100's 0.62, as Hopper; no measured fine-tuning run to fit."""
LAYER_OVERHEAD_S = 0.0024
"""τ_layer: fixed time per decoder layer per micro-step (kernel launches and Python of eager
HF + PEFT, about 300 small kernels per layer forward, recompute and backward). Fitted on Qwen-7B
LoRA on one A100 at 256, 2048 and 8192 tokens (1.2, 5.2, 21.3 s per 8 micro-steps)."""
DEQUANT_BYTES_PER_PARAM = 20
"""β_dq: memory traffic per base weight per pass for dequantising 4-bit weights (NF4 or GPTQ):
0.5 B read, 2 B written, 2 B re-read by the matmul, and kernel inefficiency. Fitted on Qwen's
QLoRA vs LoRA rows (7B, 14B, 72B: +0.22, +0.43, +1.7 s per micro-step on A100)."""
ADAPTER_BYTES_PER_ELEMENT = 4
"""β_ad: bytes moved per token per adapter input/output element and pass (dropout copy, x·A,
·B, scale, add, each read and written in bf16, backward twice): why rank barely matters."""
SCORE_BYTES_PER_ELEMENT = 16
"""β_sc: without FlashAttention the s × s scores are written, soft-maxed in fp32 and re-read."""
PASSES_WITH_CKPT = 3  # forward, recompute, backward
PASSES_WITHOUT_CKPT = 2
NVLINK_GBPS: Mapping[str, float] = {
    # Per-GPU unidirectional NVLink bandwidth (datasheets: NVLink2 300, NVLink3 600, NVLink4
    # 900, NVLink5 1800 GB/s bidirectional); MI300X Infinity Fabric 896 GB/s peer to peer.
    "V100": 150,
    "A100": 300,
    **dict.fromkeys(("H100", "H200"), 450),
    "B200": 900,
    "MI300X": 448,
    **dict.fromkeys(("MI250", "MI250X"), 200),
}
NCCL_EFFICIENCY = 0.8
"""NCCL bus bandwidth reached of the link rate (nccl-tests: ~230 GB/s on A100 NVLink3)."""
PCIE_GBPS: Mapping[str, float] = {"gen4": 16, "gen5": 32}
"""NCCL bus bandwidth between GPUs over PCIe (about half the 32 / 64 GB/s x16 link rate: traffic
crosses the root complex; GeForce cards have no peer-to-peer)."""
PCIE_GEN5 = frozenset({"H100", "H200", "B200", "RTX 5090", "RTX PRO 6000"})
HOST_LINK_GBPS = 20.0
"""GPU ↔ CPU RAM copies of an offloaded layout (PCIe 4.0 x16, 32 GB/s, shared)."""
INTER_NODE_GBPS = 40.0
"""Per-GPU bandwidth across nodes (400 Gb/s InfiniBand per GPU at 80 %)."""
GPUS_PER_NODE = 8  # section 3.8: more than 8 GPUs means a multi-node offer
CPU_ADAM_PARAMS_PER_S = 1.0e9
"""Adam steps on CPU per GPU process (a node's cores shared by its 8 GPUs; ZeRO-Offload,
arXiv:2101.06840). Fitted on torchtune's Llama-3.1-70B full fine-tune with CPU offload."""
COMM_EXPOSED = 0.1
"""ε: share of the shorter of compute and communication that prefetching cannot hide."""
ADAPTER_GRAD_BYTES = 4  # PEFT keeps adapters in fp32 (section 3.3)
ALL_TO_ALL_LEGS = 2  # dispatch and combine
MOE_EFFICIENCY: Mapping[str, float] = {
    # U_moe / U_gen: MoE trains at a fraction of dense efficiency (small expert GEMMs, routing,
    # all-to-all; moe-notes.md). Expert-parallel Megatron stacks: Megatron-Bridge gpt-oss-120b
    # 16 % and the MoE model zoo's Qwen3-235B 28 % MFU on H100, against ~48 % dense.
    "expert-parallel": 1.0,
    # Transformers + PEFT / FSDP / ZeRO on one or many GPUs (HF's expert loop): axolotl's
    # Llama-4-Scout QLoRA runs (519 tok/s on 1 x H100, 280 per GPU on 4 with FSDP2, ≈ 5 % of
    # peak); Transformers < 5 under ZeRO-3 ran another order of magnitude lower.
    "hf": 0.2,
    # The same stacks sharding the experts (ZeRO-3, FSDP): axolotl's Scout QLoRA ran 280 tokens/s
    # per GPU on 4 × H100 with FSDP2 against 519 on one; ms-swift's ZeRO-3 Qwen3-30B-A3B run
    # (transformers < 5, 16 × A800) 9.5 × slower than Megatron on the same GPUs.
    "hf-sharded": 0.1,
}
EXPERT_GEMM_HALF = 4.5e6
"""x_half: the expert GEMM size (h · I_e) at which MoE runs at half its stack's ceiling. Fitted
on the expert-parallel runs: gpt-oss-120b (2880 × 2880) and Qwen3-235B-A22B (4096 × 1536) on
H100 at 16-28 % MFU, Qwen3-30B-A3B (2048 × 768) at about 5 % on A800 (moe-notes.md)."""

# What the model does not know, for hours_range.
FRAMEWORK_SPEEDUP = 1.5
"""Fused or compiled kernels (unsloth, Liger, torchtune with compile, llm-foundry) run up to
this much faster than eager HF + PEFT: torchtune's 4090 and llm-foundry's A100 rows."""
FRAMEWORK_SLOWDOWN = 1.35
"""Slower stacks and releases (software moves figures by up to 2×, throughput-notes.md)."""
PADDING_SLOWDOWN = (1.4, 2.0, 3.4)
"""Unpacked samples, padded per batch: low, central and high slowdown of real-token
throughput (throughput-notes.md: packing gave 1.4-1.9× on 8×A100 7B runs, 3.4× on torchtune's
3B; short samples run 2-4× below fixed-length benchmarks)."""
SETUP_HOURS = 0.25
"""Download, loading, evaluation and checkpoint saves (section 4.2: 0.1-0.25 h): added to the
high end of the range only, so that hours are training time and tokens/s = T / hours."""
MEASURED_ERROR: Mapping[str, tuple[float, float, int]] = {
    # (median error ×, share within ×1.5, runs) of this time model on the measured runs the
    # tests score; a test recomputes them, so they change with the model or they fail.
    # Dense: tests/fixtures/throughput_cases.csv (21 runs up to 8 GPUs) + throughput_checks.csv (9).
    "dense": (1.06, 0.97, 30),
    # MoE: the MoE rows of moe_throughput_cases.csv (2) + moe_throughput_checks.csv (4).
    "moe": (1.32, 1.0, 6),
}
MOE_PCIE_NOTE = (
    "mixture-of-experts across {n} × {gpu} without NVLink: the traffic between GPUs (gradients; "
    "the experts' all-to-all and gathers when split) crosses PCIe, timed at PCIe bandwidth; MoE "
    "jobs on several GPUs want NVLink (SXM / HGX)"
)
SECONDS_PER_HOUR = 3600
TFLOPS = 1e12
GBPS = 1e9


def flops_per_token(w: Workload) -> float:
    """F_tok = c·P + 6·P_lora·[LoRA] + 6·L·s·h + 2·L·s·h·[ckpt] (section 4.1); for a MoE model
    P is the active count (k routed experts, shared experts, attention, embeddings: ≈ 6 × active
    per token for full training, Megatron-Bridge's "model TFLOP/s", moe-notes.md), P_lora the
    adapters a token runs through and h the query width."""
    a = w.arch
    c = FULL_FLOPS_PER_PARAM if w.method == "full" else FROZEN_FLOPS_PER_PARAM
    width = a.q_hidden
    attention = ATTENTION_FLOPS * a.layers * w.seq_len * width
    if w.grad_ckpt:
        c += RECOMPUTE_FLOPS_PER_PARAM
        attention += ATTENTION_RECOMPUTE_FLOPS * a.layers * w.seq_len * width
    adapters = (
        0.0
        if w.method == "full"
        else FULL_FLOPS_PER_PARAM * a.active_lora_params(w.lora_rank, w.lora_targets)
    )
    return c * a.compute_params + adapters + attention


def _peak_tflops(w: Workload, gpu: GpuType) -> float | None:
    return peak_tflops(w, gpu)  # FP16 with loss scaling on a card without BF16


def moe_efficiency(w: Workload, layout: str) -> float:
    """U_moe / U_gen of a mixture-of-experts model: the stack's ceiling (`MOE_EFFICIENCY`)
    times x / (x + x_half), x = h · I_e the size of one expert's GEMM (small experts, small
    GEMMs: moe-notes.md); 1 for a dense model."""
    a = w.arch
    if not a.is_moe:
        return 1.0
    if layout == "expert-parallel":
        ceiling = MOE_EFFICIENCY["expert-parallel"]
    else:
        sharded = layout.partition("+")[0] in ("zero2", "zero3", "fsdp")
        ceiling = MOE_EFFICIENCY["hf-sharded" if sharded else "hf"]
    gemm = a.hidden * a.expert_intermediate
    return ceiling * gemm / (gemm + EXPERT_GEMM_HALF)


def utilization(w: Workload, gpu: GpuType, layout: str) -> float:
    """U of the matmuls: the GPU generation's (dense, fitted), times the MoE efficiency of the
    layout's kind of stack for a mixture-of-experts model."""
    return UTILIZATION.get(gpu.family, DEFAULT_UTILIZATION) * moe_efficiency(w, layout)


def _gpu_seconds(w: Workload, gpu: GpuType, peak: float, layout: str = "none") -> float:
    """t_gpu of one micro-step on one GPU."""
    a = w.arch
    tokens = w.micro_batch * w.seq_len
    passes = PASSES_WITH_CKPT if w.grad_ckpt else PASSES_WITHOUT_CKPT
    u = utilization(w, gpu, layout)
    seconds = tokens * flops_per_token(w) / (peak * TFLOPS * u) + a.layers * LAYER_OVERHEAD_S
    bandwidth = (gpu.mem_bw_gbps or 1000.0) * GBPS
    if w.method == "qlora":
        seconds += passes * quantized_params(w) * DEQUANT_BYTES_PER_PARAM / bandwidth
    if w.method != "full":
        width = a.adapter_width(w.lora_targets)
        seconds += tokens * passes * a.layers * width * ADAPTER_BYTES_PER_ELEMENT / bandwidth
    if not (w.flash_attention and gpu.flash_attention):
        scores = tokens * w.seq_len * a.heads * a.layers
        seconds += passes * scores * SCORE_BYTES_PER_ELEMENT / bandwidth
    return seconds


def _bus_gbps(gpu: GpuType, n: int) -> float:
    if n > GPUS_PER_NODE * gpu.devices_per_gpu:
        return INTER_NODE_GBPS
    if gpu.nvlink and gpu.family in NVLINK_GBPS:
        return NCCL_EFFICIENCY * NVLINK_GBPS[gpu.family]
    return PCIE_GBPS["gen5" if gpu.family in PCIE_GEN5 else "gen4"]


def _expert_parallel_seconds(w: Workload, gpu: GpuType, n: int) -> float:
    """Expert parallel: each MoE layer sends every token's k routed copies to the GPUs holding
    their experts and back (dispatch and combine all-to-all, each pass) inside the node (EP is
    kept within the NVLink domain: ms-swift's and Megatron's advice, moe-notes.md); the
    non-expert part, split over all N, is gathered and its gradients reduce-scattered as under
    ZeRO-3. The experts' own gradients are reduced over the expert-data-parallel group once per
    optimizer step, overlapped with the backward pass (Megatron's distributed optimizer), so
    they are not charged per micro-step."""
    a = w.arch
    node = GPUS_PER_NODE * gpu.devices_per_gpu
    ep = min(expert_parallel_size(w, n), node)
    passes = PASSES_WITH_CKPT if w.grad_ckpt else PASSES_WITHOUT_CKPT
    routed = w.micro_batch * w.seq_len * a.experts_per_token * a.hidden * BYTES_16BIT
    a2a = ALL_TO_ALL_LEGS * passes * a.moe_layers * routed * (ep - 1) / ep
    seconds = a2a / (_bus_gbps(gpu, ep) * GBPS) if ep > 1 else 0.0
    weights = base_weight_bytes(w)
    expert_weights = a.expert_params * expert_bytes_per_param(w)
    full = w.method == "full"
    grads = BYTES_16BIT if full else 0.0
    dense_volume = 2 * (weights - expert_weights) + grads * (a.params - a.expert_params)
    if not full:
        dense_volume += 2 * ADAPTER_GRAD_BYTES * w.adapter_params
    seconds += dense_volume * (n - 1) / n / (_bus_gbps(gpu, n) * GBPS)
    return seconds


def _comm_seconds(w: Workload, gpu: GpuType, memory: MemoryEstimate) -> tuple[float, float]:
    """(t_comm, t_cpu_adam) of one micro-step in the memory estimate's layout."""
    n = memory.n_gpus
    if memory.sharding == "expert-parallel":
        return _expert_parallel_seconds(w, gpu, n), 0.0
    grad_bytes = (
        BYTES_16BIT * w.arch.params if w.method == "full" else ADAPTER_GRAD_BYTES * w.adapter_params
    )
    weight_bytes = base_weight_bytes(w)
    sharded = memory.sharding in ("zero3", "fsdp")
    seconds = 0.0
    if n > 1:
        # ZeRO paper section 7: 2Ψ for DDP / ZeRO-1 / ZeRO-2; gathers add 2 × weights for ZeRO-3.
        volume = 2 * grad_bytes + (2 * weight_bytes if sharded else 0.0)
        seconds = volume * (n - 1) / n / (_bus_gbps(gpu, n) * GBPS)
    if not memory.offload:
        return seconds, 0.0
    host = (2 * weight_bytes + grad_bytes) / n  # each GPU streams its shard in and out
    trainable = w.trainable_params / n
    return seconds + host / (HOST_LINK_GBPS * GBPS), trainable / CPU_ADAM_PARAMS_PER_S


def tokens_per_second(w: Workload, gpu: GpuType, memory: MemoryEstimate) -> float | None:
    """Training tokens per second of the whole job (packed sequences), or None without a peak."""
    peak = _peak_tflops(w, gpu)
    if not peak:
        return None
    t_gpu = _gpu_seconds(w, gpu, peak, memory.sharding)
    t_comm, t_cpu = _comm_seconds(w, gpu, memory)
    step = max(t_gpu, t_comm) + COMM_EXPOSED * min(t_gpu, t_comm) + t_cpu
    return memory.n_gpus * w.micro_batch * w.seq_len / step


@dataclass(frozen=True, slots=True)
class HoursEstimate:
    hours: float
    """Training time, setup excluded: tokens / tokens_per_s."""
    low: float
    high: float
    tokens_per_s: float
    layout: str
    """The layout assumed: none, ddp, zero2, zero3 (full), fsdp (LoRA), ...+offload."""
    utilization: float = 0.0
    """U: the share of the GPU's dense peak the matmuls were assumed to reach."""
    basis: str = ""
    """The utilization assumed and the measured error behind the range, in words."""


def hours_basis(w: Workload, gpu: GpuType, layout: str) -> tuple[float, str]:
    """U assumed on `gpu` in `layout`, and a sentence saying it with the measured error of the
    time model for this kind of model (`MEASURED_ERROR`)."""
    u = utilization(w, gpu, layout)
    peak = peak_tflops(w, gpu) or 0.0
    text = f"assumed utilization {u:.0%} of {gpu.id}'s {peak:g} TFLOP/s dense peak"
    if w.arch.is_moe:
        dense = UTILIZATION.get(gpu.family, DEFAULT_UTILIZATION)
        text += f" (mixture-of-experts {moe_efficiency(w, layout):.2f} × the dense {dense:.0%})"
    kind = "moe" if w.arch.is_moe else "dense"
    median, within, runs = MEASURED_ERROR[kind]
    words = "mixture-of-experts" if w.arch.is_moe else "dense"
    text += (
        f"; measured error of the time model: median ×{median:.2f}, {within:.0%} within ×1.5 "
        f"over {runs} {words} runs (docs: training.md)"
    )
    return u, text


def moe_interconnect_note(w: Workload, gpu: GpuType, n_gpus: int) -> str | None:
    """Said when a MoE job spans several GPUs that have no NVLink between them."""
    if w.arch.is_moe and n_gpus > 1 and not gpu.nvlink:
        return MOE_PCIE_NOTE.format(n=n_gpus, gpu=gpu.id)
    return None


def estimate_hours(w: Workload, gpu: GpuType, memory: MemoryEstimate) -> HoursEstimate | None:
    """Hours of `w` on `memory.n_gpus` devices of `gpu` in `memory`'s layout; None without
    tokens or a published peak. The range spans the framework (fused kernels to slower stacks),
    padding when packing is not stated, and setup time."""
    rate = tokens_per_second(w, gpu, memory)
    if w.tokens is None or rate is None:
        return None
    low_pad, central_pad, high_pad = PADDING_SLOWDOWN
    if w.packing is False:
        rate /= central_pad
        low_factor, high_factor = low_pad / central_pad, high_pad / central_pad
    elif w.packing is None:  # timed packed (as benchmarks run); the range reaches padded
        low_factor, high_factor = 1.0, central_pad
    else:
        low_factor = high_factor = 1.0
    hours = w.tokens / rate / SECONDS_PER_HOUR
    u, basis = hours_basis(w, gpu, memory.sharding)
    return HoursEstimate(
        hours=hours,
        low=hours * low_factor / FRAMEWORK_SPEEDUP,
        high=hours * high_factor * FRAMEWORK_SLOWDOWN + SETUP_HOURS,
        tokens_per_s=rate,
        layout=memory.layout,
        utilization=u,
        basis=basis,
    )


def hours_on_variants(
    w: Workload, gpus: Sequence[GpuType], memory: MemoryEstimate
) -> tuple[HoursEstimate | None, GpuType, tuple[str, ...]]:
    """Hours when the form factor is one of `gpus` (an id's SXM / PCIe / NVL rows): the estimate
    of the fastest, with a range down to the slowest, and a note saying so; or of the only one."""
    timed = [(h, gpu) for gpu in gpus if (h := estimate_hours(w, gpu, memory)) is not None]
    if not timed:
        return None, gpus[0], ()
    fastest, gpu = min(timed, key=lambda pair: pair[0].hours)
    if len(timed) == 1:
        return fastest, gpu, ()
    slow_hours, slowest = max(timed, key=lambda pair: (pair[0].hours, pair[1] != gpu))
    span = replace(
        fastest,
        low=min(h.low for h, _ in timed),
        high=max(h.high for h, _ in timed),
    )
    fast_name, slow_name = gpu.form_factor or gpu.id, slowest.form_factor or slowest.id
    if slow_hours.hours <= fastest.hours:
        return span, gpu, (f"form factor not given: {fast_name} and {slow_name} time alike here",)
    note = (
        f"form factor not given: hours are for {fast_name}, the faster variant; "
        f"the range also spans {slow_name}"
    )
    return span, gpu, (note,)
