"""Quotes: a fine-tuning workload joined with the current offers, as the API and CLI ask for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pipeline.base import utc_now
from pipeline.catalog import Catalog, GpuVariant, get_catalog
from pipeline.errors import WorkloadError
from pipeline.market.history import HistoryQuery, price_history
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.market.outlook import movement_of, percentile_of, quantile
from pipeline.market.scope import PLACE_SCOPE, OfferScope
from pipeline.workload.architectures import Architecture
from pipeline.workload.fit import (
    Fit,
    gpu_type,
    min_gpus,
    most_sharded,
    placement,
    precision_problem,
    usable_vram_gib,
)
from pipeline.workload.hours import HoursEstimate, hours_on_variants, moe_interconnect_note
from pipeline.workload.model import GPU_COUNTS, MemoryEstimate, Workload, estimate_memory
from pipeline.workload.precision import fp16_note, runs_in_fp16
from pipeline.workload.ranking import Quote, Ranking, rank_offers
from scrapers.models import Pricing
from warehouse import Warehouse
from warehouse.rollups import bucket_start

__all__ = [
    "QUOTE_SCOPE",
    "HardwareCheck",
    "QuoteRequest",
    "QuoteResult",
    "check_hardware",
    "dense_shape",
    "describe_workload",
    "history_key",
    "quote_history",
    "quote_offers",
]

HISTORY_DAYS = 30
"""Each quote is set against its own provider's prices for its GPU over this many days."""
HISTORY_BASIS = "provider_lowest_available"
"""What a quote's history prices the job at: each day, the lowest price per GPU-hour among the
available offers of the quote's provider for its GPU, form factor and pricing (not the GPU's
cross-provider index, which can sit far from the offer's own market)."""

HistoryKey = tuple[str, str, str | None, str]
"""(provider, gpu, form factor, pricing): one series of `price_history`."""


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
    markets: Mapping[HistoryKey, Sequence[float]] = field(default_factory=dict)
    """Per (provider, gpu, form factor, pricing) of the quotes, the daily prices of
    `HISTORY_BASIS` over `HISTORY_DAYS`, oldest first: their `history`."""


def history_key(offer: Mapping[str, Any]) -> HistoryKey:
    form = offer.get("form_factor")
    return (
        str(offer["provider"]), str(offer.get("gpu") or ""), str(form) if form else None,
        str(offer["pricing"]),
    )  # fmt: skip


def quote_history(quote: Quote, days: Sequence[float] | None) -> dict[str, Any] | None:
    """What the same job (GPUs × hours) would have cost at the p10, median and p90 of its
    provider's daily lowest available price (`HISTORY_BASIS`) over the last `HISTORY_DAYS`
    days, and where the offer's own price sits among those days; None without any history.
    A series that never moved says `movement: "none"` and ranks nothing (`percentile_now`
    null): any price is both the lowest and the highest of a flat series."""
    if not days:
        return None
    provider, gpu, form_factor, pricing = history_key(quote.offer)
    gpu_hours = quote.gpus * quote.hours
    ordered = sorted(days)
    now = float(quote.offer["price_per_gpu_hour"])
    return {
        "basis": HISTORY_BASIS,
        "provider": provider,
        "gpu": gpu,
        "form_factor": form_factor,
        "pricing": pricing,
        "days": HISTORY_DAYS,
        "history_days": len(days),
        **{
            f"{name}_cost_usd": quantile(ordered, q) * gpu_hours
            for name, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9))
        },
        "now_price_per_gpu_hour": now,
        "percentile_now": percentile_of(now, ordered),
        "movement": movement_of(ordered),
    }


def _provider_days(
    warehouse: Warehouse, ranking: Ranking, now: datetime
) -> dict[HistoryKey, list[float]]:
    """The daily series behind each quote's history (one `price_history` per GPU and pricing,
    every provider and form factor of the quotes at once)."""
    keys = {history_key(q.offer) for q in ranking.quotes if q.offer.get("gpu")}
    since = bucket_start(now, "1d") - timedelta(days=HISTORY_DAYS - 1)
    found: dict[HistoryKey, list[float]] = {}
    for gpu, pricing in sorted({(k[1], k[3]) for k in keys}):
        providers = tuple(sorted({k[0] for k in keys if (k[1], k[3]) == (gpu, pricing)}))
        query = HistoryQuery(
            gpu=gpu, providers=providers, pricing=pricing, interval="1d", since=since
        )
        for series in price_history(warehouse, query, now)["series"]:
            key = (series["provider"], series["gpu"], series["form_factor"], series["pricing"])
            if key in keys:
                found[key] = [
                    float(p["min_available"])
                    for p in series["points"]
                    if p.get("min_available") is not None
                ]
    return found


def quote_offers(
    warehouse: Warehouse,
    request: QuoteRequest,
    catalog: Catalog | None = None,
    *,
    with_history: bool = True,
    offers: Callable[[OfferQuery], list[dict[str, Any]]] | None = None,
    now: datetime | None = None,
) -> QuoteResult:
    """Rank the latest offers (from `offers` when given, else one query; an unconfirmed price
    outlier is not among them, migration 0033) by what the whole job
    would cost on each; with `with_history`, each quote's GPU and pricing also get their last
    `HISTORY_DAYS` days of its provider's prices, up to `now` (default: the clock)."""
    cat = catalog or get_catalog()
    request.scope.check_honoured(QUOTE_SCOPE, "quotes")
    query = OfferQuery.model_validate(request.scope.model_dump())
    ranking = rank_offers(
        request.workload,
        current_offers(warehouse, query, cat) if offers is None else offers(query),
        cat,
        include_spot=request.include_spot or request.scope.pricing == Pricing.SPOT,
        max_hours=request.max_hours,
        max_cost_usd=request.max_cost_usd,
        top=request.top,
    )
    markets = _provider_days(warehouse, ranking, now or utc_now()) if with_history else {}
    return QuoteResult(request.workload, estimate_memory(request.workload, 1), ranking, markets)


@dataclass(frozen=True, slots=True)
class HardwareCheck:
    """The job on `n_gpus` × `gpu` (no offers needed): does it fit, and how long would it run."""

    gpu: str
    n_gpus: int
    fits: bool
    memory: MemoryEstimate
    """In the layout the hours assume when the job fits; else the most sharded one tried."""
    usable_gib: float
    headroom: float
    minimum: Fit
    reason: str | None
    """Why it does not fit, when it does not."""
    hours: HoursEstimate | None
    """Timed even when the memory model says it does not fit (see `notes`); None only when the
    GPU cannot run the precision or has no published peak."""
    form_factor: str | None
    """The form factor the hours assume: given, named by the GPU, else the faster variant."""
    notes: tuple[str, ...]


def _conservative(variants: list[GpuVariant]) -> GpuVariant:
    """The smallest variant (by VRAM), then the slowest."""
    return min(
        variants,
        key=lambda v: (v.vram_gb, v.bf16_tflops_dense or 0, v.nvlink in ("yes", "xgmi"), v.id),
    )


def _variants(cat: Catalog, gpu: str, form_factor: str | None) -> tuple[list[GpuVariant], str]:
    """The catalog rows the hours may assume, and a note when the choice needs saying.

    A spelling that names a form factor (`A100-SXM4-80GB`, `H100 PCIe`) fixes it, unless
    `form_factor` is given; `A100-80GB` or `H100 80GB` leave it open. A family (`A100`) means
    its smallest variant (in that form factor, if given).
    """
    resolved = cat.resolve(gpu)
    ids = {resolved.gpu} if resolved.gpu else cat.ids_for_query(gpu)
    variants = [v for gpu_id in sorted(ids) for v in cat.variants_of(gpu_id)]
    wanted = form_factor or (str(resolved.form_factor) if resolved.form_factor else None)
    notes = []
    if wanted is not None:
        matching = [v for v in variants if str(v.form_factor) == wanted]
        if matching:
            variants = matching
        elif any(v.form_factor for v in variants):
            forms = ", ".join(sorted({str(v.form_factor) for v in variants if v.form_factor}))
            raise WorkloadError("form_factor", f"'{gpu}' comes as {forms}, not {wanted}")
        else:
            notes.append(f"'{gpu}' comes in one form only; form factor {wanted} changes nothing")
    chosen = _conservative(variants).id
    if len({v.id for v in variants}) > 1:
        notes.insert(0, f"'{gpu}' has several variants; assumed {chosen}, the smallest")
    return [v for v in variants if v.id == chosen], "; ".join(notes)


def check_hardware(
    w: Workload,
    gpu: str,
    n_gpus: int | None = None,
    catalog: Catalog | None = None,
    *,
    form_factor: str | None = None,
) -> HardwareCheck:
    """Memory per GPU on `n_gpus` × `gpu` (default: the fewest that fit), whether it fits, the
    layout and the hours. A family name (`A100`) means its smallest variant; an unknown form
    factor, the faster one for hours with a range over both; `notes` say so.
    """
    if n_gpus is not None and n_gpus not in GPU_COUNTS:
        raise WorkloadError(
            "gpus", f"must be 1, 2, 4, 8 or a multiple of 8 up to 1024, got {n_gpus}"
        )
    variants, family_note = _variants(catalog or get_catalog(), gpu, form_factor)
    kinds = [gpu_type(v) for v in variants]
    kind = kinds[0]
    minimum = min_gpus(w, kind)
    fewest = -(-minimum.n_gpus // kind.devices_per_gpu) if minimum.n_gpus else None
    n = n_gpus if n_gpus is not None else fewest or 1
    devices = n * kind.devices_per_gpu
    placed = placement(w, kind, devices)
    usable = usable_vram_gib(kind)
    memory = placed.memory
    if not placed.fits:  # the most sharded layout tried (the one asked for, if any)
        memory = most_sharded(w, kind, devices)
    reason = precision_problem(w, kind)
    if reason is None and not placed.fits:
        reason = f"needs {memory.per_gpu_gib:.1f} GiB per GPU, {usable:.1f} GiB usable"
        reason += f"; fits on {fewest} × {kind.id}" if fewest else f"; {minimum.reason}"
    hours: HoursEstimate | None = None
    timed = kind
    form_notes: tuple[str, ...] = ()
    if not precision_problem(w, kind):
        hours, timed, form_notes = hours_on_variants(w, kinds, placed.memory)
    fp16 = fp16_note(kind) if runs_in_fp16(w, kind) else None
    interconnect = moe_interconnect_note(w, kind, devices)
    notes = tuple(n for n in (family_note, placed.note, *form_notes, fp16, interconnect) if n)
    return HardwareCheck(
        gpu=kind.id,
        n_gpus=n,
        fits=reason is None,
        memory=memory,
        usable_gib=usable,
        headroom=1 - memory.per_gpu_gib / usable,
        minimum=minimum,
        reason=reason,
        hours=hours,
        form_factor=timed.form_factor,
        notes=notes,
    )


def dense_shape(a: Architecture) -> dict[str, Any]:
    """A model's dense shape under its config.json names, as the answers' `architecture` shows it
    (the quotes' workload, and each model of `/models`)."""
    return {
        "hidden_size": round(a.hidden),
        "num_hidden_layers": a.layers,
        "intermediate_size": round(a.intermediate),
        "vocab_size": a.vocab,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "tie_word_embeddings": a.tied_embeddings,
        "source": a.source,
    }


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
        "packing": w.packing,
        "flash_attention": w.flash_attention,
        "lora_targets": w.lora_targets if w.method != "full" else None,
        "active_params_b": round(a.active_params / 1e9, 3),
        "experts_bits": w.experts_bits if w.method == "qlora" and a.is_moe else None,
        "layout": w.layout,
        "architecture": {
            **dense_shape(a),
            "head_dim": round(a.head_dim) if a.head_dim else None,
            "num_experts": a.experts if a.is_moe else 0,
            "num_experts_per_tok": a.experts_per_token if a.is_moe else 0,
            "moe_intermediate_size": round(a.expert_intermediate) if a.is_moe else 0,
            "shared_expert_intermediate_size": round(a.shared_intermediate) if a.is_moe else 0,
            "moe_layers": a.moe_layers if a.is_moe else 0,
        },
    }
