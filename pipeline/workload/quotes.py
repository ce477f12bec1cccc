"""Quotes: a fine-tuning workload joined with the current offers, as the API and CLI ask for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.catalog import Catalog, GpuVariant, get_catalog
from pipeline.errors import WorkloadError
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.market.scope import PLACE_SCOPE, OfferScope
from pipeline.workload.model import (
    GPU_COUNTS,
    Fit,
    MemoryEstimate,
    Workload,
    estimate_memory,
    min_gpus,
    precision_problem,
    usable_vram_gib,
)
from pipeline.workload.precision import fp16_note, runs_in_fp16
from pipeline.workload.ranking import HoursEstimate, Ranking, estimate_hours, gpu_type, rank_offers
from scrapers.models import Pricing
from warehouse import Warehouse

__all__ = [
    "QUOTE_SCOPE",
    "HardwareCheck",
    "QuoteRequest",
    "QuoteResult",
    "check_hardware",
    "describe_workload",
    "quote_offers",
]


QUOTE_SCOPE = PLACE_SCOPE
"""Quotes rank every available offer in place and price scope; node filters come from the job."""


@dataclass(frozen=True, slots=True)
class QuoteRequest:
    workload: Workload
    scope: OfferScope = OfferScope()
    """Which offers to rank (`QUOTE_SCOPE` fields)."""
    max_hours: float | None = None
    max_cost_usd: float | None = None
    include_spot: bool = False
    """Spot offers are ranked only when asked for (or when `pricing` is spot)."""
    top: int | None = 10


@dataclass(frozen=True, slots=True)
class QuoteResult:
    workload: Workload
    memory: MemoryEstimate
    """The job on one GPU, whatever the offers."""
    ranking: Ranking


def quote_offers(
    warehouse: Warehouse, request: QuoteRequest, catalog: Catalog | None = None
) -> QuoteResult:
    """Rank the latest offers by what the whole job would cost on each."""
    cat = catalog or get_catalog()
    request.scope.check_honoured(QUOTE_SCOPE, "quotes")
    query = OfferQuery.model_validate(request.scope.model_dump())
    ranking = rank_offers(
        request.workload,
        current_offers(warehouse, query, cat),
        cat,
        include_spot=request.include_spot or request.scope.pricing == Pricing.SPOT,
        max_hours=request.max_hours,
        max_cost_usd=request.max_cost_usd,
        top=request.top,
    )
    return QuoteResult(request.workload, estimate_memory(request.workload, 1), ranking)


@dataclass(frozen=True, slots=True)
class HardwareCheck:
    """The job on `n_gpus` × `gpu` (no offers needed): does it fit, and how long would it run."""

    gpu: str
    n_gpus: int
    fits: bool
    memory: MemoryEstimate
    usable_gib: float
    headroom: float
    minimum: Fit
    reason: str | None
    """Why it does not fit, when it does not."""
    hours: HoursEstimate | None
    notes: tuple[str, ...]


def _conservative(variants: list[GpuVariant]) -> GpuVariant:
    """The smallest, slowest variant, without NVLink when there is a choice."""
    return min(
        variants,
        key=lambda v: (v.vram_gb, v.bf16_tflops_dense or 0, v.nvlink in ("yes", "xgmi"), v.id),
    )


def check_hardware(
    w: Workload, gpu: str, n_gpus: int | None = None, catalog: Catalog | None = None
) -> HardwareCheck:
    """Memory per GPU on `n_gpus` × `gpu` (default: the fewest that fit) and whether it fits.

    A family name (`A100`) means its smallest, slowest variant, and says so in `notes`.
    """
    if n_gpus is not None and n_gpus not in GPU_COUNTS:
        raise WorkloadError(
            "gpus", f"must be 1, 2, 4, 8 or a multiple of 8 up to 1024, got {n_gpus}"
        )
    cat = catalog or get_catalog()
    variants = [v for gpu_id in sorted(cat.ids_for_query(gpu)) for v in cat.variants_of(gpu_id)]
    variant = _conservative(variants)
    notes: tuple[str, ...] = ()
    if len({(v.id, v.form_factor) for v in variants}) > 1:
        form = f" {variant.form_factor}" if variant.form_factor else ""
        notes = (f"'{gpu}' has several variants; assumed {variant.id}{form}",)
    kind = gpu_type(variant)
    minimum = min_gpus(w, kind)
    fewest = -(-minimum.n_gpus // kind.devices_per_gpu) if minimum.n_gpus else None
    n = n_gpus if n_gpus is not None else fewest or 1
    devices = n * kind.devices_per_gpu
    memory = estimate_memory(w, devices, flash_attention=kind.flash_attention)
    usable = usable_vram_gib(kind)
    reason = precision_problem(w, kind)
    if runs_in_fp16(w, kind):
        notes = (*notes, fp16_note(kind))
    if reason is None and memory.per_gpu_gib > usable:
        reason = f"needs {memory.per_gpu_gib:.1f} GiB per GPU, {usable:.1f} GiB usable"
        reason += f"; fits on {fewest} × {variant.id}" if fewest else f"; {minimum.reason}"
    fits = reason is None
    return HardwareCheck(
        gpu=variant.id,
        n_gpus=n,
        fits=fits,
        memory=memory,
        usable_gib=usable,
        headroom=1 - memory.per_gpu_gib / usable,
        minimum=minimum,
        reason=reason,
        hours=estimate_hours(w, kind, devices) if fits else None,
        notes=notes,
    )


def describe_workload(w: Workload) -> dict[str, Any]:
    """The normalized workload, as the API and `--format json` print it."""
    a = w.arch
    return {
        "model": a.name,
        "params_b": round(a.params_b, 3),
        "trainable_params_m": round(w.trainable_params / 1e6, 1),
        "method": w.method,
        "precision": w.precision,
        "seq_len": w.seq_len,
        "micro_batch": w.micro_batch,
        "grad_ckpt": w.grad_ckpt,
        "optimizer": w.optimizer,
        "lora_rank": w.lora_rank if w.method != "full" else None,
        "profile": w.profile,
        "tokens": w.tokens,
        "architecture": {
            "hidden_size": round(a.hidden),
            "num_hidden_layers": a.layers,
            "intermediate_size": round(a.intermediate),
            "vocab_size": a.vocab,
            "num_attention_heads": a.heads,
            "num_key_value_heads": a.kv_heads,
            "tie_word_embeddings": a.tied_embeddings,
            "source": a.source,
        },
    }
