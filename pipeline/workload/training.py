"""What was priced is what runs: the training settings a quote assumed, the layout's config
files, and the disk the job needs.

The settings are one JSON object (`GPUPRICES_TRAINING` in the task's environment) that a training
script reads instead of re-typing them; the layout's DeepSpeed or FSDP config is written as an
Accelerate config (and a DeepSpeed JSON) by the task's setup step. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pipeline.catalog import Catalog
from pipeline.workload.fit import gpu_type
from pipeline.workload.model import (
    ADAM_BYTES,
    ADAPTER_ADAM_BYTES,
    ADAPTER_WEIGHT_BYTES,
    BYTES_16BIT,
    PURE_BF16_ADAM_BYTES,
    Workload,
    expert_parallel_size,
)
from pipeline.workload.precision import runs_in_fp16
from pipeline.workload.ranking import Quote

__all__ = [
    "CONFIG_DIR",
    "LORA_MODULES",
    "TRAINING_ENV",
    "disk_gb",
    "layout_files",
    "training_settings",
]

TRAINING_ENV = "GPUPRICES_TRAINING"
"""The environment variable that holds the settings, one JSON object."""
CONFIG_DIR = "gpuprices"
"""Where the setup step writes the layout's configs, relative to the task's working directory
(both launchers run the setup and the job from the same one)."""

LORA_MODULES: Mapping[str, tuple[str, ...]] = {
    # workload-model.md section 3.3: the seven linear projections of a Llama-style block
    "all": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
    # the same names inside every routed expert too (HF's per-expert modules)
    "experts": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
}
EXPERT_MODULES = r".*\.experts\..*"
"""PEFT `exclude_modules`: a MoE model's routed experts, left out of LoRA on `all` (as priced)."""

# Disk: the base model as downloaded (16-bit safetensors, also for QLoRA, quantized on load),
# the checkpoints kept, the final weights, the tokenized data, plus the image and packages.
KEPT_CHECKPOINTS = 2
"""Checkpoints on disk at once (Transformers' `save_total_limit=2`, a common choice)."""
TEXT_BYTES_PER_TOKEN = 4
"""About 4 bytes of UTF-8 text per token for English with Llama-style tokenizers."""
TOKEN_ID_BYTES = 4
"""Tokenized data cached as int32 ids."""
SYSTEM_DISK_GB = 60
"""OS, CUDA, PyTorch and the training packages in the launchers' default images."""
DISK_MARGIN = 1.2
"""Logs, caches and a checkpoint being written while the oldest is not yet deleted."""
DISK_STEP_GB = 10
"""Disk sizes are rounded up to a multiple of this."""
BYTES_PER_GB = 10**9


def _checkpoint_bytes(w: Workload) -> tuple[float, float]:
    """One training checkpoint (trainable weights and optimizer states) and the final weights."""
    if w.method == "full":
        adam = (PURE_BF16_ADAM_BYTES if w.pure_bf16 else ADAM_BYTES)[w.optimizer]
        return (BYTES_16BIT + adam) * w.arch.params, BYTES_16BIT * w.arch.params
    adapters = w.adapter_params
    return (
        (ADAPTER_WEIGHT_BYTES + ADAPTER_ADAM_BYTES[w.optimizer]) * adapters,
        ADAPTER_WEIGHT_BYTES * adapters,
    )


def disk_gb(w: Workload) -> int:
    """GB of disk for the job: model download, `KEPT_CHECKPOINTS` checkpoints, the result, the
    data (text and token ids) and `SYSTEM_DISK_GB`, with `DISK_MARGIN`, rounded up."""
    checkpoint, final = _checkpoint_bytes(w)
    data = (w.tokens or 0) * (TEXT_BYTES_PER_TOKEN + TOKEN_ID_BYTES)
    job = BYTES_16BIT * w.arch.params + KEPT_CHECKPOINTS * checkpoint + final + data
    total = job * DISK_MARGIN / BYTES_PER_GB + SYSTEM_DISK_GB
    return int(math.ceil(total / DISK_STEP_GB) * DISK_STEP_GB)


def _hub_id(w: Workload) -> str | None:
    """The Hugging Face repository of a known model (its alias with an owner), if any."""
    return next((alias for alias in w.arch.aliases if "/" in alias), None)


def training_settings(w: Workload, quote: Quote, catalog: Catalog) -> dict[str, Any]:
    """The settings the quote's memory and hours assumed, as the job should run them."""
    variants = catalog.variants_of(str(quote.offer["gpu"]))
    kind = gpu_type(variants[0]) if variants else None
    fp16 = kind is not None and runs_in_fp16(w, kind)
    lora = w.method != "full"
    layout = quote.layout
    sharding = layout.partition("+")[0]
    files = {"accelerate": f"{CONFIG_DIR}/accelerate.yaml"}
    if sharding.startswith("zero"):
        files["deepspeed"] = f"{CONFIG_DIR}/deepspeed.json"
    devices = quote.gpus * (kind.devices_per_gpu if kind else 1)
    moe = w.arch.is_moe
    expert_parallel = sharding == "expert-parallel"
    if expert_parallel:
        files["megatron"] = f"{CONFIG_DIR}/megatron.json"
    return {
        "model": w.arch.name,
        "hub_id": _hub_id(w),
        "method": w.method,
        "precision": "fp16" if fp16 else w.precision,
        "pure_bf16": w.pure_bf16,
        "seq_len": w.seq_len,
        "micro_batch": w.micro_batch,
        "grad_ckpt": w.grad_ckpt,
        "optimizer": w.optimizer,
        "lora_rank": w.lora_rank if lora else None,
        "lora_targets": w.lora_targets if lora else None,
        "lora_target_modules": list(LORA_MODULES[w.lora_targets]) if lora else None,
        "lora_exclude_modules": (
            EXPERT_MODULES if lora and moe and w.lora_targets != "experts" else None
        ),
        "load_in_4bit": w.method == "qlora",
        "experts_bits": w.experts_bits if moe and w.method == "qlora" else None,
        "num_experts": w.arch.experts if moe else None,
        "expert_parallel_size": expert_parallel_size(w, devices) if expert_parallel else None,
        "profile": w.profile,
        "packing": w.packing,
        "flash_attention": w.flash_attention and (kind is None or kind.flash_attention),
        "tokens": w.tokens,
        "layout": layout,
        "gpus": quote.gpus,
        "config_files": files,
    }


def _deepspeed(settings: Mapping[str, Any]) -> dict[str, Any]:
    """DeepSpeed's JSON for ZeRO-1/2/3 (+ CPU offload); "auto" values Accelerate fills in."""
    sharding, _, offload = str(settings["layout"]).partition("+")
    stage = int(sharding.removeprefix("zero"))
    zero: dict[str, Any] = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True}
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    precision = str(settings["precision"])
    return {
        precision: {"enabled": True},
        "zero_optimization": zero,
        "train_micro_batch_size_per_gpu": settings["micro_batch"],
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
    }


def _accelerate(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Accelerate's config for the layout: one process, DDP, DeepSpeed or FSDP full shard."""
    sharding, _, offload = str(settings["layout"]).partition("+")
    gpus = int(settings["gpus"])
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "machine_rank": 0,
        "num_machines": 1,
        "num_processes": gpus,
        "mixed_precision": settings["precision"],
        "use_cpu": False,
    }
    if sharding.startswith("zero"):
        config["distributed_type"] = "DEEPSPEED"
        config["deepspeed_config"] = {
            "deepspeed_config_file": settings["config_files"]["deepspeed"],
            "zero3_init_flag": sharding == "zero3",
        }
    elif sharding == "fsdp":
        # PEFT's FSDP-QLoRA recipe (examples/sft/configs/fsdp_config_qlora.yaml)
        config["distributed_type"] = "FSDP"
        config["fsdp_config"] = {
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_backward_prefetch": "BACKWARD_PRE",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_forward_prefetch": False,
            "fsdp_offload_params": bool(offload),
            "fsdp_sharding_strategy": "FULL_SHARD",
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_sync_module_states": True,
            "fsdp_use_orig_params": False,
        }
    else:
        config["distributed_type"] = "MULTI_GPU" if gpus > 1 else "NO"
    return config


def _megatron(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The expert-parallel layout in Megatron-LM's argument names (as ms-swift's `megatron sft`
    takes them): experts split EP ways, the rest over the GPUs, the distributed optimizer."""
    return {
        "expert_model_parallel_size": settings["expert_parallel_size"],
        "tensor_model_parallel_size": 1,
        "pipeline_model_parallel_size": 1,
        "use_distributed_optimizer": True,
        "moe_grouped_gemm": True,
        "recompute_granularity": "full" if settings["grad_ckpt"] else None,
        "micro_batch_size": settings["micro_batch"],
        "seq_length": settings["seq_len"],
        settings["precision"]: True,
    }


def layout_files(settings: Mapping[str, Any]) -> dict[str, str]:
    """The layout's config files by path (JSON text; JSON is YAML for Accelerate's loader)."""
    paths = settings["config_files"]
    files = {paths["accelerate"]: json.dumps(_accelerate(settings), indent=2)}
    if "deepspeed" in paths:
        files[paths["deepspeed"]] = json.dumps(_deepspeed(settings), indent=2)
    if "megatron" in paths:
        files[paths["megatron"]] = json.dumps(_megatron(settings), indent=2)
    return files
