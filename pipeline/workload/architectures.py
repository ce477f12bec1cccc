"""Transformer shapes for the workload model: a table of known models, a `config.json`, or a size.

The shapes are those of Llama/Mistral/Qwen-style decoders (SwiGLU MLP, RMSNorm, grouped-query
attention), the family the workload model was calibrated on (`docs/pages/notes/workload-model.md`,
section 2), and their mixture-of-experts forms: some or all layers replace the MLP by E routed
experts of width I_e (k of them per token), a router and optional shared experts (Qwen3-MoE,
gpt-oss, Mixtral, Llama-4, DeepSeek-V3, Kimi-K2, GLM-4.5). `head_dim` is read where it is not
hidden / heads (Qwen3, Gemma-3, gpt-oss), and DeepSeek's multi-head latent attention (MLA) from its
low-rank fields. Known models live in `pipeline/data/models.csv`: each row is its model's
`config.json` fields under their Hugging Face names, read by `from_config` exactly as a given or
fetched `config.json` is (one path), beside the model card's own counts (`KnownModel`).

Parameter counts: total P counts attention, every expert, routers, dense MLPs, embeddings and
norms. Active parameters (`active_params`) count what one token runs through, without the input
embedding (a lookup, no FLOPs; OpenAI's convention for gpt-oss); `active_params_incl_embedding`
adds it back (Qwen's cards). A dense model's active count is its total.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any, Literal, cast

from pipeline.errors import WorkloadError

__all__ = [
    "ActiveCounts",
    "Architecture",
    "KnownModel",
    "Mla",
    "catalog",
    "fallback_architecture",
    "from_config",
    "known_models",
    "lookup_model",
    "model_key",
]

_NORMS_PER_LAYER = 2
"""RMSNorm weights per decoder layer (input and post-attention), plus one final norm."""

# Fallback profile when only "X B parameters" is given: workload-model.md section 2 ("the same
# idea gpu_poor uses"): Llama-3 style, V = 128256, I = 3.5 h, n_kv = n_h / 4, L and h by bucket.
FALLBACK_VOCAB = 128_256
FALLBACK_MLP_RATIO = 3.5
FALLBACK_KV_FRACTION = 0.25
FALLBACK_HEAD_DIM = 128
FALLBACK_LAYERS: tuple[tuple[float, int], ...] = (
    # (up to params_b, layers) from the section 2 table; its h column is only a starting point,
    # since h is then solved from P
    (4.0, 28),
    (10.0, 32),
    (20.0, 48),
    (40.0, 64),
    (math.inf, 80),
)
_CONFIG_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "intermediate_size",
    "vocab_size",
    "num_attention_heads",
)
EXPERT_COUNT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
"""Routed experts per MoE layer: Qwen-MoE, gpt-oss / Mixtral / Llama-4, DeepSeek / Kimi / GLM."""
_MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
SWIGLU_MATRICES = 3
"""gate, up and down projections of a SwiGLU MLP or expert."""
_TEXT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    # transformers' Gemma3TextConfig defaults, which a saved config.json leaves out
    # (configuration_gemma3.py: vocab_size 262_208, head_dim 256, tie_word_embeddings True)
    "gemma3_text": {"vocab_size": 262_208, "head_dim": 256, "tie_word_embeddings": True},
}

ActiveCounts = Literal["all", "no_input_embedding", "no_embeddings"]
"""What a model card's active-parameter count includes: everything a token uses (Qwen, Meta,
DeepSeek), everything but the input embedding (OpenAI's gpt-oss), or neither embedding matrix
(Z.ai's GLM)."""


@dataclass(frozen=True, slots=True)
class Mla:
    """DeepSeek's multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434): q and kv
    pass through low-rank projections; `q_lora_rank` 0 means q is projected directly."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class Architecture:
    """The shape of one decoder; `params` is P, the total parameter count.

    `hidden` and `intermediate` are floats because the fallback solves h from P (unrounded, so
    that estimates move smoothly with P); known models and configs hold integers.
    `intermediate` is the dense layers' MLP width. A mixture-of-experts model has `experts` > 0:
    its `moe_layers` layers hold `experts` routed experts of width `expert_intermediate`, each
    token going through `experts_per_token` of them and through the shared experts (total
    width `shared_intermediate`); the other layers are dense.
    """

    name: str
    hidden: float
    layers: int
    intermediate: float
    vocab: int
    heads: int
    kv_heads: int
    tied_embeddings: bool
    params: float
    source: str = ""
    aliases: tuple[str, ...] = ()
    head_dim: float | None = None
    """Width of one attention head where it is not hidden / heads (Qwen3, Gemma-3, gpt-oss)."""
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: float = 0.0
    shared_intermediate: float = 0.0
    moe_layers: int = 0
    mla: Mla | None = None
    context_length: int | None = None
    """`max_position_embeddings`: the longest sequence the model was built for, tokens."""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0 and self.moe_layers > 0

    @property
    def head_width(self) -> float:
        return self.head_dim or self.hidden / self.heads

    @property
    def q_hidden(self) -> float:
        """Width of the queries (and attention output): n_h · head_dim; h for Llama-style."""
        return self.heads * self.head_width

    @property
    def kv_hidden(self) -> float:
        """h_kv = n_kv · head_dim (= h · n_kv / n_h when head_dim = h / n_h)."""
        return self.kv_heads * self.head_width

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers if self.is_moe else self.layers

    def _attention_widths(self) -> tuple[float, ...]:
        """Σ(d_in + d_out) of each attention projection of one layer."""
        h, m = self.hidden, self.mla
        if m is None:  # q, k, v, o
            q, kv = self.q_hidden, self.kv_hidden
            return (h + q, h + kv, h + kv, q + h)
        qk = self.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q_widths = (h + m.q_lora_rank, m.q_lora_rank + qk) if m.q_lora_rank else (h + qk,)
        kv_a = h + m.kv_lora_rank + m.qk_rope_head_dim
        kv_b = m.kv_lora_rank + self.heads * (m.qk_nope_head_dim + m.v_head_dim)
        return (*q_widths, kv_a, kv_b, self.heads * m.v_head_dim + h)

    @property
    def attention_params(self) -> float:
        """Parameters of one layer's attention projections."""
        h, m = self.hidden, self.mla
        if m is None:
            return 2 * h * self.q_hidden + 2 * h * self.kv_hidden
        qk = self.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = h * m.q_lora_rank + m.q_lora_rank * qk if m.q_lora_rank else h * qk
        kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv += m.kv_lora_rank * self.heads * (m.qk_nope_head_dim + m.v_head_dim)
        return q + kv + self.heads * m.v_head_dim * h

    @property
    def expert_params(self) -> float:
        """Every routed expert of every MoE layer (SwiGLU: 3 · h · I_e each)."""
        return (
            self.moe_layers
            * self.experts
            * SWIGLU_MATRICES
            * self.hidden
            * self.expert_intermediate
            if self.is_moe
            else 0.0
        )

    @property
    def router_params(self) -> float:
        return self.moe_layers * self.experts * self.hidden if self.is_moe else 0.0

    @property
    def linear_params(self) -> float:
        """P_lin: the linear projections (q, k, v, o, dense MLPs, shared and routed experts); for
        a Llama-style block L · (2h² + 2h·h_kv + 3h·I) (section 2). Routers stay in P_oth."""
        h = self.hidden
        mlp = self.dense_layers * SWIGLU_MATRICES * h * self.intermediate
        if self.is_moe:
            mlp += self.moe_layers * SWIGLU_MATRICES * h * self.shared_intermediate
        return self.layers * self.attention_params + mlp + self.expert_params

    @property
    def other_params(self) -> float:
        """P_oth = P − P_lin: embeddings, lm_head, norms, routers (kept 16-bit under QLoRA)."""
        return max(self.params - self.linear_params, 0.0)

    @property
    def inactive_expert_params(self) -> float:
        """The routed experts a token does not go through."""
        if not self.is_moe:
            return 0.0
        return self.expert_params * (self.experts - self.experts_per_token) / self.experts

    @property
    def active_params_incl_embedding(self) -> float:
        """Parameters one token uses, the input embedding counted (Qwen's cards)."""
        return self.params - self.inactive_expert_params

    @property
    def active_params(self) -> float:
        """Parameters one token runs through, without the input embedding for MoE models
        (OpenAI's gpt-oss convention; a lookup has no FLOPs); the total for a dense model."""
        if not self.is_moe:
            return self.params
        embedding = 0.0 if self.tied_embeddings else self.vocab * self.hidden
        return self.active_params_incl_embedding - embedding

    @property
    def compute_params(self) -> float:
        """The P of the FLOPs per token: the total for a dense model (as the time model was
        fitted), the active parameters with the embedding for a MoE model (same convention)."""
        return self.active_params_incl_embedding

    @property
    def active_intermediate(self) -> float:
        """MLP width one token's activations see, averaged over the layers: I for dense layers,
        k · I_e + shared for MoE layers."""
        if not self.is_moe:
            return self.intermediate
        moe = self.experts_per_token * self.expert_intermediate + self.shared_intermediate
        return (self.dense_layers * self.intermediate + self.moe_layers * moe) / self.layers

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    def lora_params(self, rank: int, targets: str = "all") -> float:
        """P_lora = r · Σ(d_in + d_out) over the adapted projections of every layer (section
        3.3; Hu et al., arXiv:2106.09685): `all` = attention and the dense / shared MLPs (the
        routed experts are not adapted, as in ms-swift "all-linear", axolotl
        `lora_target_linear` and Unsloth); `attention` = q, k, v, o only; `experts` = `all`
        plus every routed expert."""
        return rank * self._adapter_widths(targets, active=False)

    def active_lora_params(self, rank: int, targets: str = "all") -> float:
        """The adapters one token runs through (only k of the routed experts' adapters)."""
        return rank * self._adapter_widths(targets, active=True)

    def adapter_width(self, targets: str = "all") -> float:
        """Σ(d_in + d_out) of one layer's adapted projections a token runs through, averaged
        over layers: 2(h+h) + 2(h+h_kv) [+ 3(h+I)] for a Llama-style block."""
        return self._adapter_widths(targets, active=True) / self.layers

    def _adapter_widths(self, targets: str, *, active: bool) -> float:
        h = self.hidden
        total = self.layers * sum(self._attention_widths())
        if targets == "attention":
            return total
        total += self.dense_layers * SWIGLU_MATRICES * (h + self.intermediate)
        if self.is_moe and self.shared_intermediate:
            total += self.moe_layers * SWIGLU_MATRICES * (h + self.shared_intermediate)
        if self.is_moe and targets == "experts":
            count = self.experts_per_token if active else self.experts
            total += self.moe_layers * count * SWIGLU_MATRICES * (h + self.expert_intermediate)
        return total


def _int(values: Mapping[str, Any], key: str) -> int:
    value = values.get(key)
    return 0 if value in (None, "") else int(value)


def _moe_layers(values: Mapping[str, Any], layers: int) -> int:
    """Layers whose MLP is a mixture of experts: all but the first `first_k_dense_replace`
    (DeepSeek, Kimi, GLM), Qwen-MoE's `mlp_only_layers` and `decoder_sparse_step`, every
    `interleave_moe_layer_step`-th (Llama-4 Maverick), or Llama-4's own `moe_layers` list."""
    listed = values.get("moe_layers")
    if isinstance(listed, list):
        return len(listed)
    if listed not in (None, "") and not isinstance(listed, list | dict | bool):
        return int(listed)
    dense_first = _int(values, "first_k_dense_replace")
    step = _int(values, "interleave_moe_layer_step") or _int(values, "decoder_sparse_step") or 1
    only_mlp = values.get("mlp_only_layers") or []
    only_mlp = set(only_mlp) if isinstance(only_mlp, list) else set()
    return sum(
        1 for i in range(layers) if i >= dense_first and (i + 1) % step == 0 and i not in only_mlp
    )


def _build(
    name: str, values: Mapping[str, Any], source: str, aliases: tuple[str, ...] = ()
) -> Architecture:
    hidden, layers, inter, vocab, heads = (int(values[k]) for k in _CONFIG_KEYS)
    kv_heads = int(values.get("num_key_value_heads") or heads)
    tied = bool(values.get("tie_word_embeddings", False))
    head_dim = _int(values, "head_dim")
    experts = max(_int(values, key) for key in EXPERT_COUNT_KEYS)
    mla = Mla(*(_int(values, key) for key in _MLA_KEYS)) if _int(values, "kv_lora_rank") else None
    base = Architecture(
        name,
        hidden,
        layers,
        inter,
        vocab,
        heads,
        kv_heads,
        tied,
        0.0,
        source,
        aliases,
        head_dim=head_dim if head_dim and head_dim * heads != hidden else None,
        mla=mla,
        context_length=_int(values, "max_position_embeddings") or None,
    )
    if experts:
        expert_width = _int(values, "moe_intermediate_size") or inter
        shared = _int(values, "shared_expert_intermediate_size") or (
            _int(values, "n_shared_experts") * expert_width
        )
        if str(values.get("model_type", "")).startswith("llama4"):
            shared = shared or inter  # Llama-4: one shared expert of the experts' width
            inter = _int(values, "intermediate_size_mlp") or inter
        base = replace(
            base,
            intermediate=inter,
            experts=experts,
            experts_per_token=_int(values, "num_experts_per_tok")
            or _int(values, "experts_per_token")
            or 1,
            expert_intermediate=expert_width,
            shared_intermediate=shared,
            moe_layers=_moe_layers(values, layers),
        )
    embeddings = vocab * hidden * (1 if tied else 2)
    norms = (_NORMS_PER_LAYER * layers + 1) * hidden
    params = base.linear_params + base.router_params + embeddings + norms
    return replace(base, params=params)


@dataclass(frozen=True, slots=True)
class KnownModel:
    """A catalog row: the architecture its config gives, and what its model card publishes."""

    arch: Architecture
    hub_id: str | None
    """The Hugging Face id the row's config.json comes from (its first `owner/name` alias)."""
    published_total_b: float
    published_active_b: float | None
    published_active_counts: ActiveCounts | None
    vision_params_b: float
    """A multimodal model's vision encoder, in the card's total, not in the text decoder."""

    def active_params_counting(self, counts: ActiveCounts) -> float:
        """The computed active count, counted as a card counts it (`ActiveCounts`)."""
        a = self.arch
        embedding = a.vocab * a.hidden
        if counts == "all":
            return a.active_params_incl_embedding
        untied_input = 0.0 if a.tied_embeddings else embedding
        if counts == "no_input_embedding":
            return a.active_params_incl_embedding - untied_input
        return a.active_params_incl_embedding - untied_input - embedding

    @property
    def published_active_computed(self) -> float | None:
        counts = self.published_active_counts
        return None if counts is None else self.active_params_counting(counts)


_CATALOG_ONLY = frozenset(
    {
        "name",
        "aliases",
        "source",
        "vision_params_b",
        "published_total_b",
        "published_active_b",
        "published_active_counts",
    }
)
"""Columns of models.csv that are not config.json fields."""


def _config_row(row: Mapping[str, str]) -> dict[str, Any]:
    """A models.csv row as the config.json mapping it was copied from (empty cells absent)."""
    config: dict[str, Any] = {}
    for key, text in row.items():
        if key in _CATALOG_ONLY or not text:
            continue
        lowered = text.strip().lower()
        config[key] = lowered == "true" if lowered in ("true", "false") else int(text)
    return config


def _optional_float(text: str) -> float | None:
    return float(text) if text else None


@cache
def catalog() -> tuple[KnownModel, ...]:
    """The rows of `pipeline/data/models.csv`, each read through `from_config`, once."""
    text = resources.files("pipeline.data").joinpath("models.csv").read_text(encoding="utf-8")
    models = []
    for row in csv.DictReader(text.splitlines()):
        aliases = tuple(a for a in row["aliases"].split("|") if a)
        arch = from_config(_config_row(row), name=row["name"])
        # models.csv's column holds an `ActiveCounts` value or nothing
        counts = cast("ActiveCounts | None", row["published_active_counts"] or None)
        models.append(
            KnownModel(
                arch=replace(arch, source=row["source"], aliases=aliases),
                hub_id=next((a for a in aliases if "/" in a), None),
                published_total_b=float(row["published_total_b"]),
                published_active_b=_optional_float(row["published_active_b"]),
                published_active_counts=counts,
                vision_params_b=_optional_float(row["vision_params_b"]) or 0.0,
            )
        )
    return tuple(models)


@cache
def known_models() -> tuple[Architecture, ...]:
    """The catalog's architectures, in its order."""
    return tuple(m.arch for m in catalog())


def model_key(name: str) -> str:
    """Case- and punctuation-insensitive key; an `org/` prefix is ignored."""
    return re.sub(r"[^a-z0-9.]+", "", name.rsplit("/", 1)[-1].lower())


@cache
def _by_key() -> dict[str, Architecture]:
    table: dict[str, Architecture] = {}
    for arch in known_models():
        for alias in (arch.name, *arch.aliases):
            table.setdefault(model_key(alias), arch)
    return table


def lookup_model(name: str) -> Architecture:
    """A catalog model by name, alias or Hub id, case-insensitively; `WorkloadError` on `model`
    with the closest names."""
    arch = _by_key().get(model_key(name))
    if arch is not None:
        return arch
    names = [a.name for a in known_models()]
    by_key = {model_key(n): n for n in names}
    matches = difflib.get_close_matches(model_key(name), list(by_key), n=3, cutoff=0.5)
    closest = [by_key[m] for m in matches]
    raise WorkloadError(
        "model",
        f"unknown model '{name}' (see GET /models; or give a Hugging Face id owner/name, a "
        "config.json or params_b)",
        closest,
    )


_POSITIVE_KEYS = (
    *_CONFIG_KEYS,
    "num_key_value_heads",
    "head_dim",
    *EXPERT_COUNT_KEYS,
    "num_experts_per_tok",
    "moe_intermediate_size",
)


def from_config(config: Mapping[str, Any], name: str | None = None) -> Architecture:
    """A Hugging Face `config.json` (already parsed) of a decoder, dense or mixture-of-experts;
    a multimodal checkpoint's `text_config` is its language model (Gemma-3, Llama-4, Mistral-3:
    the vision tower is not counted)."""
    if not isinstance(config, Mapping):
        raise WorkloadError("config", "must be a JSON object (the model's config.json)")
    text = config.get("text_config")
    if isinstance(text, Mapping) and "hidden_size" not in config:
        config = {
            **text,
            "_name_or_path": config.get("_name_or_path"),
            **(
                {"tie_word_embeddings": config["tie_word_embeddings"]}
                if "tie_word_embeddings" in config and "tie_word_embeddings" not in text
                else {}
            ),
        }
    config = {**_TEXT_DEFAULTS.get(str(config.get("model_type")), {}), **config}
    missing = [k for k in _CONFIG_KEYS if k not in config]
    if missing:
        raise WorkloadError("config", f"missing {', '.join(missing)}")
    for key in _POSITIVE_KEYS:
        value = config.get(key)
        if value is None and key not in _CONFIG_KEYS:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise WorkloadError("config", f"{key} must be a positive integer, got {value!r}")
    heads = config["num_attention_heads"]
    divides = (
        config.get("head_dim") or config.get("kv_lora_rank") or not config["hidden_size"] % heads
    )
    if not divides or heads % (config.get("num_key_value_heads") or heads):
        raise WorkloadError(
            "config", "hidden_size must divide by num_attention_heads, and heads by KV heads"
        )
    experts = max(int(config.get(k) or 0) for k in EXPERT_COUNT_KEYS)
    k = int(config.get("num_experts_per_tok") or config.get("experts_per_token") or 0)
    if experts and k > experts:
        raise WorkloadError(
            "config", f"num_experts_per_tok ({k}) is more than the {experts} experts"
        )
    label = name or str(config.get("_name_or_path") or config.get("model_type") or "config.json")
    return _build(label, config, "config.json")


def fallback_architecture(params_b: float) -> Architecture:
    """The documented Llama-3-style guess for a model known only by its size in B.

    L comes from the size bucket; h is then solved so that P_lin + P_oth ≈ P
    (workload-model.md section 2, "Then rescale h").
    """
    if not math.isfinite(params_b) or params_b <= 0:
        raise WorkloadError("params_b", f"must be a positive number of billions, got {params_b!r}")
    params = params_b * 1e9
    layers = next(n for limit, n in FALLBACK_LAYERS if params_b <= limit)
    # P(h) = a·h² + b·h with a = L·(2 + 2·kv + 3·ratio), b = 2V + 2L + 1 (untied embeddings)
    a = layers * (2 + 2 * FALLBACK_KV_FRACTION + 3 * FALLBACK_MLP_RATIO)
    b = 2 * FALLBACK_VOCAB + _NORMS_PER_LAYER * layers + 1
    hidden_exact = (-b + math.sqrt(b * b + 4 * a * params)) / (2 * a)
    # 4 KV groups of 128-wide heads keep n_kv / n_h exactly 1/4
    heads = 4 * max(1, round(hidden_exact / (4 * FALLBACK_HEAD_DIM)))
    return Architecture(
        name=f"generic-{params_b:g}B",
        hidden=hidden_exact,
        layers=layers,
        intermediate=FALLBACK_MLP_RATIO * hidden_exact,
        vocab=FALLBACK_VOCAB,
        heads=heads,
        kv_heads=round(heads * FALLBACK_KV_FRACTION),
        tied_embeddings=False,
        params=params,
        source="fallback architecture, workload-model.md section 2",
    )
