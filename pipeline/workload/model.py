"""The fine-tuning workload and its GPU memory: per GPU, on N GPUs, and the fewest GPUs that fit.

Pure functions over frozen dataclasses; no I/O. Every constant cites its section of
`docs/pages/notes/workload-model.md` (the research note with the primary sources). Memory is in
GiB (2^30 bytes) throughout, as PyTorch and nvidia-smi print it (section 1).

    M_gpu = 1.05·(weights + gradients + optimizer) + 1.15·(activations + logits + gathers) + 0.75

A layout says how the job spreads over its GPUs: replicated (DDP), ZeRO-1/2, ZeRO-3 / FSDP full
shard, optionally with the model states offloaded to CPU RAM, or, for a mixture-of-experts model,
expert-parallel (each GPU holds E / EP of the experts, Megatron-style, with the optimizer states
sharded over all GPUs as its distributed optimizer does). Memory follows the total parameter count
(every expert is resident, `docs/pages/notes/moe-notes.md`); compute the active one (`hours`).
Which layout a job gets on given hardware is chosen in `pipeline.workload.fit`; its hours in
`pipeline.workload.hours`; offers in `pipeline.workload.ranking`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from pipeline.errors import WorkloadError
from pipeline.workload.architectures import (
    Architecture,
    fallback_architecture,
    from_config,
)
from pipeline.workload.hub import ModelHub, resolve_model

__all__ = [
    "GIB",
    "GPU_COUNTS",
    "MAX_GPUS",
    "ExpertsBits",
    "LayoutChoice",
    "LoraTargets",
    "MemoryBreakdown",
    "MemoryEstimate",
    "Method",
    "Optimizer",
    "Precision",
    "Profile",
    "Workload",
    "estimate_memory",
    "expert_bytes_per_param",
    "expert_parallel_size",
    "parse_tokens",
]

Method = Literal["full", "lora", "qlora"]
Precision = Literal["bf16", "fp16"]
Optimizer = Literal["adamw", "adamw_8bit", "paged_adamw"]
Profile = Literal["hf", "fused"]
LoraTargets = Literal["all", "attention", "experts"]
ExpertsBits = Literal[4, 16]
LayoutChoice = Literal["auto", "ddp", "zero2", "zero3", "fsdp", "expert-parallel"]
ZeroStage = Literal[0, 1, 2, 3]
Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp", "expert-parallel"]

GIB = 2**30
MAX_SEQ_LEN = 1 << 20
GPU_COUNTS: tuple[int, ...] = (1, 2, 4, *range(8, 1025, 8))
"""Offer sizes: 1, 2, 4, 8, then multiples of 8 (one node holds 8; section 3.8) up to 1024."""
MAX_GPUS = GPU_COUNTS[-1]

# Section 3.1 (Transformer Math 101; ZeRO, arXiv:1910.02054): bytes per parameter.
BYTES_16BIT = 2  # bf16/fp16 weights and gradients
ADAM_BYTES = {"adamw": 12, "adamw_8bit": 6, "paged_adamw": 12}
"""Mixed precision: fp32 master 4 + m 4 + v 4 = ZeRO's K = 12; 8-bit Adam 4 + 1 + 1. Paged
optimizers only spill under pressure: a safety valve, not a saving (section 3.1)."""
PURE_BF16_ADAM_BYTES = {"adamw": 4, "adamw_8bit": 2, "paged_adamw": 4}
"""No fp32 master copy (LLaMA-Factory `pure_bf16`, torchtune): bf16 m, v (section 3.1)."""
# Section 3.3: PEFT keeps adapters in fp32: weights 4 + grads 4 + Adam 8 (8-bit Adam: 2).
ADAPTER_WEIGHT_BYTES = 4
ADAPTER_GRAD_BYTES = 4
ADAPTER_ADAM_BYTES = {"adamw": 8, "adamw_8bit": 2, "paged_adamw": 8}
NF4_BITS_PER_PARAM = 4.127
"""Section 3.4 (QLoRA, arXiv:2305.14314): 4-bit NF4 + double-quantized constants (0.127 bit)."""
BITS_PER_BYTE = 8

# Section 3.5 (Korthikanti et al., arXiv:2205.05198, recounted for SwiGLU/RMSNorm/GQA blocks).
ACT_BYTES_PER_HIDDEN = 16  # a_tok = 16·h + 4·h_kv + 8·I bytes per token per layer
ACT_BYTES_PER_KV_HIDDEN = 4
ACT_BYTES_PER_INTERMEDIATE = 8
FUSED_ACTIVATION_FACTOR = 0.5  # fused RMSNorm/SwiGLU (Liger, unsloth, torch.compile)
CKPT_INPUT_BYTES = 2  # checkpointing keeps each layer's bf16 input: 2·h per token per layer
ATTENTION_SCORE_BYTES = 5  # 5·a·s/h term, only without FlashAttention (V100, T4, MI250)
ROUTED_COPY_BYTES = 4
"""MoE layers keep each token's k routed copies of its input and output (bf16, 2 + 2 bytes per
hidden element): the permutation buffers of HF's expert loop and of Megatron's all-to-all."""
# Section 3.6: logits and loss buffer, bytes per token per vocabulary entry.
LOGIT_BYTES: dict[str, float] = {"hf": 12, "fused": 1}
MEGATRON_LOGIT_BYTES = 4
"""Megatron's fused vocab-parallel cross-entropy (the expert-parallel stacks) keeps only the fp32
softmax for the backward pass; fitted on ms-swift's Megatron LoRA runs (moe_workload_cases.csv:
Qwen3-30B-A3B and gpt-oss-20b on EP2, 16k tokens per micro-batch)."""
# Section 3.2: ZeRO-3/FSDP keep one layer computing and one prefetched, 2 bytes per param.
GATHERED_LAYERS = 2
# Section 3 (fitted on the measured cases, section 6).
STATIC_FACTOR = 1.05
DYNAMIC_FACTOR = 1.15
CUDA_CONTEXT_GIB = 0.75
# Section 3.8: usable VRAM is 95% of the nominal size (ECC and driver reservations).
USABLE_VRAM_FRACTION = 0.95

_TOKEN_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_tokens(value: int | float | str) -> int:
    """`50M`, `1.5B`, `200k`, `2e8` or a plain number of training tokens (dataset × epochs)."""
    if isinstance(value, bool):
        raise WorkloadError("tokens", f"must be a number of tokens, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMbBgGtT]?)\s*", value)
        try:
            number = (
                float(match.group(1)) * _TOKEN_SUFFIX[match.group(2).lower()] if match else math.nan
            )
        except ValueError:
            number = math.nan
        if math.isnan(number):
            raise WorkloadError("tokens", f"'{value}' is not a token count like 50M or 1.5B")
    if not math.isfinite(number) or number <= 0:
        raise WorkloadError("tokens", f"must be positive, got {value!r}")
    return round(number)


def _check_choice(name: str, value: object, allowed: tuple[object, ...]) -> None:
    if value not in allowed:
        raise WorkloadError(name, f"must be one of {', '.join(map(str, allowed))}, got {value!r}")


def _check_count(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WorkloadError(name, f"must be an integer from {low} to {high}, got {value!r}")


_CHOICES: tuple[tuple[str, tuple[object, ...]], ...] = tuple(
    (name, get_args(kind))
    for name, kind in (
        ("method", Method),
        ("precision", Precision),
        ("optimizer", Optimizer),
        ("profile", Profile),
        ("lora_targets", LoraTargets),
        ("experts_bits", ExpertsBits),
        ("layout", LayoutChoice),
    )
)
"""Each choice field's allowed values (read once: a ranking builds hundreds of workloads)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """One fine-tuning job; defaults are those of section 2 (checkpointing on, LoRA r = 16)."""

    arch: Architecture
    method: Method
    precision: Precision = "bf16"
    seq_len: int = 2048
    micro_batch: int = 1
    grad_ckpt: bool = True
    optimizer: Optimizer = "adamw"
    lora_rank: int = 16
    profile: Profile = "hf"
    tokens: int | None = None
    pure_bf16: bool = False
    packing: bool | None = None
    """Samples packed into full sequences (True), padded one per sequence (False), or unstated."""
    flash_attention: bool = True
    """FlashAttention-2 / SDPA flash kernels, where the GPU has them (not V100, T4, MI250)."""
    lora_targets: LoraTargets = "all"
    """LoRA adapters on all linear projections but the routed experts (ms-swift "all-linear",
    axolotl `lora_target_linear`, Unsloth), on q, k, v, o only, or on every expert too."""
    experts_bits: ExpertsBits = 4
    """QLoRA: the routed experts quantized to 4 bit (axolotl `quantize_moe_experts`, Unsloth: the
    measured runs) or left 16-bit (Transformers v5 fused expert tensors, which bitsandbytes skips;
    moe-notes.md). Ignored for dense models and for LoRA and full fine-tuning."""
    layout: LayoutChoice = "auto"
    """How the job spreads over its GPUs: `auto` tries the layouts in order (`fit.layouts`)."""

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES:
            _check_choice(name, getattr(self, name), allowed)
        for name in ("grad_ckpt", "pure_bf16", "flash_attention"):
            if not isinstance(getattr(self, name), bool):
                raise WorkloadError(name, "must be true or false")
        if self.packing is not None and not isinstance(self.packing, bool):
            raise WorkloadError("packing", "must be true, false or unset")
        _check_count("seq_len", self.seq_len, 1, MAX_SEQ_LEN)
        _check_count("micro_batch", self.micro_batch, 1, 4096)
        _check_count("lora_rank", self.lora_rank, 1, 65536)
        if self.tokens is not None:
            _check_count("tokens", self.tokens, 1, 10**16)
        if self.pure_bf16 and self.precision != "bf16":
            raise WorkloadError("pure_bf16", "needs precision bf16")
        if not self.arch.params > 0:
            raise WorkloadError("params_b", "must be positive")
        if self.layout == "expert-parallel" and not self.arch.is_moe:
            raise WorkloadError(
                "layout",
                f"expert-parallel shards experts, and {self.arch.name} is a dense model; "
                "use ddp, zero2, zero3 or fsdp",
            )

    @classmethod
    def build(
        cls,
        *,
        model: str | None = None,
        config: Mapping[str, Any] | None = None,
        params_b: float | None = None,
        method: Method,
        hub: ModelHub | None = None,
        **options: Any,
    ) -> Workload:
        """From exactly one of a model name (the catalog, else with a `hub` any Hugging Face id:
        `pipeline.workload.hub.resolve_model`), a parsed `config.json` or a size in B."""
        if sum(source is not None for source in (model, config, params_b)) != 1:
            raise WorkloadError("model", "give exactly one of model, config or params_b")
        if model is not None:
            arch = resolve_model(model, hub)
        elif config is not None:
            arch = from_config(config)
        else:
            assert params_b is not None  # exactly one of the three is given (checked above)
            arch = fallback_architecture(float(params_b))
        if "tokens" in options and options["tokens"] is not None:
            options["tokens"] = parse_tokens(options["tokens"])
        return cls(arch=arch, method=method, **options)

    @property
    def quantized_experts(self) -> bool:
        """QLoRA with the routed experts in 4 bit."""
        return self.method == "qlora" and self.experts_bits == 4

    @property
    def trainable_params(self) -> float:
        return self.arch.params if self.method == "full" else self.adapter_params

    @property
    def adapter_params(self) -> float:
        """P_lora on the chosen targets (section 3.3)."""
        return self.arch.lora_params(self.lora_rank, self.lora_targets)


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """GiB per GPU; the six parts add up to the total. `weights` includes ZeRO-3/FSDP gathers."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    overhead: float

    @property
    def total(self) -> float:
        # sum(astuple(self)), in the same order, without astuple's deep copy (hot in ranking)
        return float(
            0
            + self.weights
            + self.gradients
            + self.optimizer
            + self.activations
            + self.logits
            + self.overhead
        )


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    n_gpus: int
    sharding: Sharding
    offload: bool
    """Weights, gradients and optimizer states in CPU RAM, streamed in layer by layer."""
    per_gpu_gib: float
    breakdown: MemoryBreakdown
    states_gib: float
    """Model states only (weights + gradients + optimizer, sharded), before any factor."""
    floor_gib: float
    """What no number of GPUs removes: context plus the per-GPU activations and logits."""

    @property
    def layout(self) -> str:
        """`ddp`, `zero2`, `zero3`, `fsdp`, `zero3+offload`, ... as quotes name it."""
        if self.offload:
            return "offload" if self.sharding == "none" else f"{self.sharding}+offload"
        return self.sharding


def expert_parallel_size(w: Workload, n_gpus: int) -> int:
    """EP: the experts are split over the largest group of GPUs that divides both the GPU count
    and the expert count (Megatron needs EP to divide the data-parallel size)."""
    return math.gcd(n_gpus, w.arch.experts) if w.arch.is_moe else 1


def _expert_parallel_bytes(w: Workload, n: int) -> tuple[float, float, float]:
    """Weights, gradients, optimizer bytes per GPU with the experts split EP ways and the rest
    (attention, dense and shared MLPs, embeddings) split over all N GPUs, as the measured
    Megatron runs do with tensor / pipeline parallelism or Megatron-FSDP beside EP; optimizer
    states over all N (the distributed optimizer; moe-notes.md "Expert parallelism")."""
    a, ep = w.arch, expert_parallel_size(w, n)
    experts = a.expert_params
    if w.method == "full":
        adam = (PURE_BF16_ADAM_BYTES if w.pure_bf16 else ADAM_BYTES)[w.optimizer]
        resident = (a.params - experts) / n + experts / ep
        return BYTES_16BIT * resident, BYTES_16BIT * resident, adam * a.params / n
    base = base_weight_bytes(w)
    expert_base = experts * expert_bytes_per_param(w)
    adapters = w.adapter_params
    expert_adapters = (
        adapters - a.lora_params(w.lora_rank, "all") if w.lora_targets == "experts" else 0.0
    )
    resident_adapters = (adapters - expert_adapters) / n + expert_adapters / ep
    weights = (base - expert_base) / n + expert_base / ep + ADAPTER_WEIGHT_BYTES * resident_adapters
    return (
        weights,
        ADAPTER_GRAD_BYTES * resident_adapters,
        ADAPTER_ADAM_BYTES[w.optimizer] * adapters / n,
    )


def _states_bytes(
    w: Workload, n: int, stage: ZeroStage
) -> tuple[float, float, float, Sharding, bool]:
    """Weights, gradients, optimizer bytes per GPU; the sharding; whether layers are gathered."""
    a = w.arch
    full_shard: Sharding = "fsdp" if w.layout == "fsdp" else "zero3"
    lora_shard: Sharding = "zero3" if w.layout == "zero3" else "fsdp"
    if w.method == "full":
        adam = (PURE_BF16_ADAM_BYTES if w.pure_bf16 else ADAM_BYTES)[w.optimizer]
        weights, grads, optim = BYTES_16BIT * a.params, BYTES_16BIT * a.params, adam * a.params
        if n == 1:
            return weights, grads, optim, "none", False
        # Section 3.2, ZeRO paper table: stage 1 shards the optimizer, 2 also the gradients,
        # 3 (= FSDP FULL_SHARD, the default) also the parameters.
        return _sharded(
            weights, grads, optim, n, stage, ("ddp", "zero1", "zero2", full_shard)[stage]
        )
    adapters = w.adapter_params
    weights = base_weight_bytes(w) + ADAPTER_WEIGHT_BYTES * adapters
    grads = ADAPTER_GRAD_BYTES * adapters
    optim = ADAPTER_ADAM_BYTES[w.optimizer] * adapters
    if n == 1:
        return weights, grads, optim, "none", False
    # Sections 3.3 and 3.8: LoRA/QLoRA on N > 1 replicate the base (DDP, stage 0) or shard base
    # and adapters with FSDP (stage 3, FSDP-QLoRA); stages 1 and 2 shard only adapter states.
    return _sharded(weights, grads, optim, n, stage, ("ddp", "zero1", "zero2", lora_shard)[stage])


def _sharded(
    weights: float, grads: float, optim: float, n: int, stage: int, sharding: Sharding
) -> tuple[float, float, float, Sharding, bool]:
    """States per GPU at ZeRO `stage` on `n` GPUs: 1 shards the optimizer, 2 also the
    gradients, 3 also the weights (gathered layer by layer in flight)."""
    return (
        weights / n if stage >= 3 else weights,
        grads / n if stage >= 2 else grads,
        optim / n if stage >= 1 else optim,
        sharding,
        stage >= 3,
    )


def expert_bytes_per_param(w: Workload) -> float:
    """Bytes of one routed-expert weight of the frozen or trained base: NF4 or 16-bit."""
    return NF4_BITS_PER_PARAM / BITS_PER_BYTE if w.quantized_experts else BYTES_16BIT


def quantized_params(w: Workload) -> float:
    """The base weights QLoRA stores in NF4 (and dequantizes each pass): the linear layers,
    the routed experts only when `experts_bits` is 4; none for LoRA and full fine-tuning."""
    if w.method != "qlora":
        return 0.0
    a = w.arch
    return a.linear_params - (0.0 if w.quantized_experts else a.expert_params)


def base_weight_bytes(w: Workload) -> float:
    """The frozen base of LoRA (16-bit) or QLoRA (NF4 linear layers, 16-bit embeddings,
    lm_head, norms and routers, section 3.4; routed experts NF4 or 16-bit as `experts_bits`
    says); the whole model, 16-bit, for full fine-tuning."""
    a = w.arch
    if w.method == "qlora":
        nf4 = quantized_params(w)
        return nf4 * NF4_BITS_PER_PARAM / BITS_PER_BYTE + BYTES_16BIT * (a.params - nf4)
    return BYTES_16BIT * a.params


def _activation_bytes(w: Workload, flash_attention: bool) -> float:  # section 3.5
    a = w.arch
    per_token_layer = (
        ACT_BYTES_PER_HIDDEN * a.hidden
        + ACT_BYTES_PER_KV_HIDDEN * a.kv_hidden
        + ACT_BYTES_PER_INTERMEDIATE * a.active_intermediate
    )
    if a.is_moe:
        routed = a.moe_layers / a.layers * a.experts_per_token
        per_token_layer += ROUTED_COPY_BYTES * routed * a.hidden
    if w.profile == "fused":
        per_token_layer *= FUSED_ACTIVATION_FACTOR
    tokens = w.micro_batch * w.seq_len
    stored_layers = 1 if w.grad_ckpt else a.layers  # checkpointing recomputes one layer at a time
    act = tokens * stored_layers * per_token_layer
    if w.grad_ckpt:
        act += tokens * CKPT_INPUT_BYTES * a.hidden * a.layers
    if not flash_attention:  # the materialized s × s scores per head (Korthikanti's 5·a·s/h)
        act += (
            stored_layers * ATTENTION_SCORE_BYTES * a.heads * w.seq_len * w.seq_len * w.micro_batch
        )
    return act


def estimate_memory(
    w: Workload,
    n_gpus: int = 1,
    *,
    zero_stage: ZeroStage = 3,
    offload: bool = False,
    flash_attention: bool = True,
    expert_parallel: bool = False,
) -> MemoryEstimate:
    """GiB per GPU when the job runs on `n_gpus` GPUs with ZeRO-`zero_stage` (0: DDP; 3: ZeRO-3 /
    FSDP full shard); `offload` keeps the model states in CPU RAM (ZeRO-Offload, FSDP CPU
    offload) so that only the layers in flight sit on the GPU; `expert_parallel` splits a MoE
    model's experts over the GPUs instead (`zero_stage` and `offload` then do not apply).
    `flash_attention` is whether the GPU has the kernels; the workload's own `flash_attention`
    can still turn them off."""
    _check_count("gpus", n_gpus, 1, MAX_GPUS)
    if expert_parallel and not w.arch.is_moe:
        raise WorkloadError("layout", "expert-parallel needs a mixture-of-experts model")
    return _estimate_memory(
        w,
        n_gpus,
        zero_stage,
        offload,
        flash_attention and w.flash_attention,
        expert_parallel and n_gpus > 1,
    )


@lru_cache(maxsize=4096)
def _estimate_memory(
    w: Workload,
    n_gpus: int,
    zero_stage: ZeroStage,
    offload: bool,
    flash_attention: bool,
    expert_parallel: bool,
) -> MemoryEstimate:
    """Pure, and asked again and again by `min_gpus` (every GPU type, count, layout and
    alternative workload of a ranking): kept per (workload, count, layout, attention kernel)."""
    stage: ZeroStage = 3 if offload else zero_stage
    if expert_parallel:
        weights, grads, optim = _expert_parallel_bytes(w, n_gpus)
        sharding: Sharding = "expert-parallel"
        gathered = offload = False
    else:
        weights, grads, optim, sharding, gathered = _states_bytes(w, n_gpus, stage)
    if offload:  # states live in CPU RAM; the GPU holds the layers being computed (section 3.2)
        weights = grads = optim = 0.0
        gathered = True
    gathers = GATHERED_LAYERS * BYTES_16BIT * w.arch.params / w.arch.layers if gathered else 0.0
    if expert_parallel:  # the split non-expert part of a layer, in flight
        dense_part = w.arch.params - w.arch.expert_params
        gathers = GATHERED_LAYERS * BYTES_16BIT * dense_part / w.arch.layers
    acts = _activation_bytes(w, flash_attention)
    per_logit = LOGIT_BYTES[w.profile]
    if expert_parallel:
        per_logit = min(per_logit, MEGATRON_LOGIT_BYTES)
    logits = w.micro_batch * w.seq_len * w.arch.vocab * per_logit
    static = weights + grads + optim
    dynamic = acts + logits + gathers
    overhead = (
        (STATIC_FACTOR - 1) * static + (DYNAMIC_FACTOR - 1) * dynamic + CUDA_CONTEXT_GIB * GIB
    )
    breakdown = MemoryBreakdown(
        weights=(weights + gathers) / GIB,
        gradients=grads / GIB,
        optimizer=optim / GIB,
        activations=acts / GIB,
        logits=logits / GIB,
        overhead=overhead / GIB,
    )
    floor = (DYNAMIC_FACTOR * (acts + logits)) / GIB + CUDA_CONTEXT_GIB
    return MemoryEstimate(
        n_gpus, sharding, offload, breakdown.total, breakdown, static / GIB, floor
    )
