"""Request and response models of the workload quotes: `POST /quotes`, `/offers/best`, `/models`.

`--format json` of `gpuprices quote` prints these same models.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from api.rest.schemas import OfferOut
from api.rest.schemas_index import QuoteHistoryOut, quote_history_out
from pipeline.market.scope import Name, OfferScope, front_end_model
from pipeline.workload.hub import ModelHub
from pipeline.workload.model import MAX_SEQ_LEN, MemoryEstimate, Workload
from pipeline.workload.quotes import (
    QUOTE_SCOPE,
    HardwareCheck,
    QuoteRequest,
    QuoteResult,
    describe_workload,
)
from pipeline.workload.ranking import Quote

__all__ = [
    "ArchitectureOut",
    "HardwareOut",
    "QuoteIn",
    "QuoteOut",
    "QuotesOut",
    "TaskIn",
    "WorkloadQuery",
    "hardware_out",
    "quotes_out",
]


MAX_TOKENS = 10**16
"""Training tokens at most (a 10-quadrillion-token job is far past any fine-tune)."""
MAX_PARAMS_B = 100_000.0
"""Model size at most, in billions of parameters (100T)."""
MAX_TOP = 10_000
"""Most quotes one answer holds."""
_JSON_INT = 2**53  # larger integers do not survive a JSON round trip through doubles
_JSON_DEPTH = 8
_JSON_ITEMS = 1_000
_JSON_TEXT = 10_000


def bounded_json(value: Any, depth: int = 0) -> Any:
    """`value` if it is plain JSON a config.json could hold: finite numbers within ±2^53,
    strings up to 10,000 characters, at most 1,000 items per level and 8 levels deep."""
    if depth > _JSON_DEPTH:
        raise ValueError(f"nested deeper than {_JSON_DEPTH} levels")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        if not (abs(value) <= _JSON_INT):  # also false for NaN
            raise ValueError(f"numbers must be finite and within ±2^53, got {str(value)[:20]}")
        return value
    if isinstance(value, str):
        if len(value) > _JSON_TEXT:
            raise ValueError(f"strings must be at most {_JSON_TEXT:,} characters")
        return value
    items = list(value.items()) if isinstance(value, dict) else value
    if not isinstance(value, dict | list) or len(items) > _JSON_ITEMS:
        raise ValueError(f"lists and objects hold at most {_JSON_ITEMS:,} items")
    for item in items:
        for part in item if isinstance(value, dict) else (item,):
            bounded_json(part, depth + 1)
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(bounded_json)]
Tokens = (
    Annotated[int, Field(ge=1, le=MAX_TOKENS)]
    | Annotated[str, StringConstraints(min_length=1, max_length=32)]
)


_WORKLOAD_OPTIONS = frozenset(f.name for f in dataclasses.fields(Workload)) - {"arch"}
"""The job's options as `Workload` declares them (method, tokens, seq_len, ...)."""

QuoteScope = front_end_model(OfferScope, QUOTE_SCOPE, "QuoteScope")
"""The offers a quote ranks, as the API names them (`provider`, `country`, ...)."""


class WorkloadQuery(QuoteScope):  # type: ignore[misc,valid-type]  # a model built from the scope's fields
    """The workload and the offer filters; bounds here, the model's own checks in
    `pipeline.workload.model`."""

    model_config = ConfigDict(allow_inf_nan=False)

    model: Name | None = Field(
        None,
        description="A catalog model (GET /models) by name or Hugging Face id, or any Hugging "
        "Face id (owner/name): its config.json is fetched once and kept",
        examples=["Llama-3.1-8B"],
    )
    params_b: float | None = Field(
        None, gt=0, le=MAX_PARAMS_B, description="Size in billions, when the model is not known"
    )
    method: Literal["full", "lora", "qlora"]
    tokens: Tokens = Field(
        description="Training tokens (dataset × epochs): 50M, 1.5B, 2e8; at most 10^16"
    )
    precision: Literal["bf16", "fp16"] = "bf16"
    seq_len: int = Field(2048, ge=1, le=MAX_SEQ_LEN, description="Tokens per sequence")
    micro_batch: int = Field(1, ge=1, le=4096, description="Sequences per GPU per step")
    grad_ckpt: bool = Field(True, description="Gradient (activation) checkpointing")
    optimizer: Literal["adamw", "adamw_8bit", "paged_adamw"] = "adamw"
    lora_rank: int = Field(16, ge=1, le=65536)
    profile: Literal["hf", "fused"] = Field(
        "hf", description="hf: Transformers + PEFT + FA2; fused: unsloth, Liger or torchtune"
    )
    packing: bool | None = Field(
        None,
        description="Samples packed into full sequences (true) or padded (false); unset: hours "
        "for packed, range up to padded",
    )
    flash_attention: bool = Field(True, description="FlashAttention-2 where the GPU has it")
    lora_targets: Literal["all", "attention", "experts"] = Field(
        "all",
        description="LoRA on all linear layers but a MoE model's routed experts (all), on "
        "attention (q, k, v, o) only, or on every routed expert too (experts)",
    )
    experts_bits: Literal[4, 16] = Field(
        4,
        description="QLoRA on a mixture-of-experts model: routed experts in 4 bit (axolotl, "
        "Unsloth) or 16 bit (Transformers v5 fused experts, which bitsandbytes skips)",
    )
    layout: Literal["auto", "ddp", "zero2", "zero3", "fsdp", "expert-parallel"] = Field(
        "auto",
        description="How the job spreads over its GPUs; auto: the first that fits of ddp, "
        "expert-parallel (MoE), zero2 (full), zero3/fsdp",
    )
    max_hours: float | None = Field(
        None, gt=0, le=1e7, allow_inf_nan=False, description="Leave out offers slower than this"
    )
    max_cost_usd: float | None = Field(
        None, gt=0, le=1e12, allow_inf_nan=False, description="Leave out dearer offers, USD"
    )
    include_spot: bool = Field(False, description="Also rank spot offers, with their risk")
    top: int = Field(
        1, ge=1, le=MAX_TOP, description=f"Quotes to return, cheapest first (at most {MAX_TOP:,})"
    )

    def workload(
        self, config: dict[str, Any] | None = None, hub: ModelHub | None = None
    ) -> Workload:
        """The job: every option this query shares with `Workload`, from one of its sources
        (`hub`: where a Hugging Face id's config.json comes from)."""
        fields = type(self).model_fields
        options = {name: getattr(self, name) for name in _WORKLOAD_OPTIONS if name in fields}
        return Workload.build(
            model=self.model, config=config, params_b=self.params_b, hub=hub, **options
        )

    def request(
        self, config: dict[str, Any] | None = None, hub: ModelHub | None = None
    ) -> QuoteRequest:
        return QuoteRequest(
            workload=self.workload(config, hub),
            scope=OfferScope.model_validate(self.model_dump(include=QUOTE_SCOPE)),
            max_hours=self.max_hours,
            max_cost_usd=self.max_cost_usd,
            include_spot=self.include_spot,
            top=self.top,
        )


class QuoteIn(WorkloadQuery):
    config: JsonObject | None = Field(
        None, description="A Hugging Face config.json, for a model GET /models does not list"
    )
    top: int = Field(
        10, ge=1, le=MAX_TOP, description=f"Quotes to return, cheapest first (at most {MAX_TOP:,})"
    )


class TaskIn(QuoteIn):
    """A quote request, and which quote to write a task file for, for which launcher."""

    launcher: Literal["skypilot", "dstack"] = Field(
        description="skypilot: a SkyPilot task YAML; dstack: a dstack task configuration"
    )
    pick: int = Field(
        1, ge=1, le=MAX_TOP, description="Which quote, cheapest first (1: the cheapest)"
    )

    def request(
        self, config: dict[str, Any] | None = None, hub: ModelHub | None = None
    ) -> QuoteRequest:
        """The quotes up to `pick` at least."""
        request = super().request(config, hub)
        return dataclasses.replace(request, top=max(self.top, self.pick))


class BreakdownOut(BaseModel):
    """GiB per GPU; the parts add up to `per_gpu_gib`."""

    weights: float = Field(description="Incl. ZeRO-3/FSDP layers gathered in flight")
    gradients: float
    optimizer: float
    activations: float
    logits: float = Field(description="Logits and loss buffers")
    overhead: float = Field(description="CUDA context, allocator rounding and fragmentation")


class MemoryOut(BaseModel):
    n_gpus: int
    sharding: str = Field(description="none, ddp, zero1, zero2, zero3 or fsdp")
    layout: str = Field(description="The sharding, with +offload when states sit in CPU RAM")
    per_gpu_gib: float
    states_gib: float = Field(description="Weights, gradients and optimizer states per GPU")
    breakdown: BreakdownOut


class QuoteOut(BaseModel):
    offer: OfferOut
    gpus: int
    hours: float = Field(description="Training time (setup excluded): tokens / tokens_per_s")
    hours_range: tuple[float, float] = Field(
        description="Fused kernels to slower stacks, padding if packing is unstated, form "
        "factors if the offer does not say, plus setup"
    )
    tokens_per_s: float = Field(description="Training tokens per second, all GPUs together")
    utilization: float = Field(description="Share of the GPU's dense peak the hours assume")
    hours_basis: str = Field(
        description="The utilization assumed and the measured error behind hours_range"
    )
    layout: str = Field(
        description="ddp, zero2, zero3 (full), fsdp (LoRA), expert-parallel (MoE), ...+offload"
    )
    form_factor: str | None = Field(
        description="The form factor the hours assume: the offer's, else the faster variant"
    )
    cost_usd: float = Field(description="Offer price per hour × hours")
    cost_range_usd: tuple[float, float]
    memory_per_gpu_gib: float
    headroom: float = Field(description="1 − memory per GPU / usable VRAM (95% of nominal)")
    interruption_risk: str | None = Field(description="Set for spot offers")
    notes: list[str]
    history: QuoteHistoryOut | None = Field(None, description="null: no index history")


class SkippedOut(BaseModel):
    gpu: str
    reason: str
    offers: int


class ArchitectureOut(BaseModel):
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int = Field(description="The dense layers' MLP width")
    vocab_size: int
    num_attention_heads: int
    num_key_value_heads: int
    tie_word_embeddings: bool
    source: str
    head_dim: int | None = Field(None, description="Set where it is not hidden / heads")
    num_experts: int = Field(0, description="Routed experts per MoE layer; 0: dense")
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = Field(0, description="Width of one routed expert")
    shared_expert_intermediate_size: int = Field(0, description="All shared experts' width")
    moe_layers: int = Field(0, description="Layers whose MLP is a mixture of experts")


class WorkloadOut(BaseModel):
    """The workload as understood: defaults filled in, tokens counted, the model's shape."""

    model: str
    params_b: float
    trainable_params_m: float
    method: str
    precision: str
    seq_len: int
    micro_batch: int
    grad_ckpt: bool
    optimizer: str
    lora_rank: int | None = Field(description="Null for full fine-tuning")
    profile: str
    tokens: int | None
    packing: bool | None
    flash_attention: bool
    lora_targets: str | None = Field(description="Null for full fine-tuning")
    active_params_b: float = Field(
        description="Parameters one token runs through (MoE: without the input embedding); "
        "the total for a dense model"
    )
    experts_bits: int | None = Field(
        description="QLoRA on a MoE model: the routed experts' bits; null otherwise"
    )
    layout: str = Field(description="The layout asked for (auto: the first that fits)")
    architecture: ArchitectureOut


class QuotesOut(BaseModel):
    workload: WorkloadOut
    memory: MemoryOut = Field(description="The job on one GPU")
    quotes: list[QuoteOut]
    count: int = Field(description="Offers that can run the job (quotes holds the top ones)")
    skipped: list[SkippedOut]


class FitOut(BaseModel):
    gpu: str
    gpus: int
    fits: bool
    usable_gib: float
    headroom: float
    min_gpus: int | None = Field(description="Fewest GPUs of this type that fit; null if none")
    reason: str | None
    suggestions: list[str] = Field(description="Single changes that would make it fit")
    hours: float | None = Field(
        description="Training time on this hardware, given even when the memory estimate says "
        "it does not fit (notes say how it was timed); null only without a usable peak"
    )
    hours_range: tuple[float, float] | None
    tokens_per_s: float | None
    utilization: float | None = Field(description="Share of the dense peak the hours assume")
    hours_basis: str | None = Field(
        description="The utilization assumed and the measured error behind hours_range"
    )
    layout: str | None = Field(description="The layout the hours assume")
    form_factor: str | None = Field(description="The form factor the hours assume")
    notes: list[str]


class HardwareOut(BaseModel):
    workload: WorkloadOut
    memory: MemoryOut
    fit: FitOut


def memory_out(memory: MemoryEstimate) -> MemoryOut:
    return MemoryOut.model_validate(memory, from_attributes=True)


def _quote_out(quote: Quote, result: QuoteResult) -> QuoteOut:
    out = QuoteOut.model_validate(quote, from_attributes=True)
    return out.model_copy(update={"history": quote_history_out(quote, result.markets)})


def quotes_out(result: QuoteResult) -> QuotesOut:
    ranking = result.ranking
    return QuotesOut(
        workload=WorkloadOut.model_validate(describe_workload(result.workload)),
        memory=memory_out(result.memory),
        quotes=[_quote_out(q, result) for q in ranking.quotes],
        count=ranking.feasible,
        skipped=[SkippedOut(gpu=s.gpu, reason=s.reason, offers=s.offers) for s in ranking.skipped],
    )


def hardware_out(workload: Workload, check: HardwareCheck) -> HardwareOut:
    hours = check.hours
    return HardwareOut(
        workload=WorkloadOut.model_validate(describe_workload(workload)),
        memory=memory_out(check.memory),
        fit=FitOut(
            gpu=check.gpu,
            gpus=check.n_gpus,
            fits=check.fits,
            usable_gib=check.usable_gib,
            headroom=check.headroom,
            min_gpus=check.minimum.n_gpus,
            reason=check.reason,
            suggestions=list(check.minimum.suggestions),
            hours=hours.hours if hours else None,
            hours_range=(hours.low, hours.high) if hours else None,
            tokens_per_s=hours.tokens_per_s if hours else None,
            utilization=hours.utilization if hours else None,
            hours_basis=hours.basis if hours else None,
            layout=hours.layout if hours else None,
            form_factor=check.form_factor,
            notes=list(check.notes),
        ),
    )
