"""`GET /models`, `gpuprices models` and the MCP `models` tool: the model catalog, one shape.

Each catalog row is its model's `config.json` read by `pipeline.workload.architectures`; this
module only says it in the API's words: total and active parameters, dense or MoE, context
length, and the model card's own counts beside the computed ones.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from api.rest.schemas_quotes import ArchitectureOut
from pipeline.workload.architectures import KnownModel, catalog
from pipeline.workload.quotes import dense_shape

__all__ = ["ExpertsOut", "ModelOut", "ModelsPage", "model_out", "models_page"]

_BILLION = 1e9


class ExpertsOut(BaseModel):
    """A mixture-of-experts model's expert blocks, as its config.json gives them."""

    num_experts: int = Field(description="Routed experts per MoE layer")
    num_experts_per_tok: int = Field(description="Routed experts each token goes through")
    moe_intermediate_size: int = Field(description="One routed expert's MLP width")
    shared_intermediate_size: int = Field(
        description="Total MLP width of the shared experts every token goes through (0: none)"
    )
    moe_layers: int = Field(description="Decoder layers with experts; the rest are dense")


class ModelOut(ArchitectureOut):
    """A catalog model: its name and Hub id, its size, then the shape `ArchitectureOut` gives."""

    name: str
    hub_id: str | None = Field(description="The Hugging Face id its config.json comes from")
    aliases: list[str] = Field(description="Other names it is found by (case-insensitively)")
    kind: Literal["dense", "moe"]
    total_params_b: float = Field(description="Every parameter of the text decoder, B")
    active_params_b: float = Field(
        description="Parameters one token goes through, input embedding included, B (a dense "
        "model's: all of them)"
    )
    active_params_b_without_input_embedding: float = Field(
        description="active_params_b less the input embedding lookup (untied models), B"
    )
    context_length: int | None = Field(description="max_position_embeddings, tokens")
    head_dim: int | None = Field(description="Attention head width, where not hidden / heads")
    experts: ExpertsOut | None = Field(description="Null for a dense model")
    published_total_b: float = Field(description="The model card's total, B")
    published_active_b: float | None = Field(description="The model card's active count, B")
    published_active_counts: Literal["all", "no_input_embedding", "no_embeddings"] | None = Field(
        description="What the card's active count includes: everything a token uses, all but "
        "the input embedding, or neither embedding matrix"
    )
    vision_params_b: float = Field(
        description="A multimodal model's vision encoder, in the card's total, not modelled, B"
    )


class ModelsPage(BaseModel):
    models: list[ModelOut]
    count: int


def model_out(model: KnownModel) -> ModelOut:
    a = model.arch
    return ModelOut(
        name=a.name,
        hub_id=model.hub_id,
        aliases=list(a.aliases),
        kind="moe" if a.is_moe else "dense",
        total_params_b=round(a.params / _BILLION, 3),
        active_params_b=round(model.active_params_counting("all") / _BILLION, 3),
        active_params_b_without_input_embedding=round(
            model.active_params_counting("no_input_embedding") / _BILLION, 3
        ),
        context_length=a.context_length,
        head_dim=None if a.head_dim is None else round(a.head_dim),
        experts=ExpertsOut(
            num_experts=a.experts,
            num_experts_per_tok=a.experts_per_token,
            moe_intermediate_size=round(a.expert_intermediate),
            shared_intermediate_size=round(a.shared_intermediate),
            moe_layers=a.moe_layers,
        )
        if a.is_moe
        else None,
        published_total_b=model.published_total_b,
        published_active_b=model.published_active_b,
        published_active_counts=model.published_active_counts,
        vision_params_b=model.vision_params_b,
        **dense_shape(a),
    )


def models_page() -> ModelsPage:
    models = [model_out(m) for m in catalog()]
    return ModelsPage(models=models, count=len(models))
