"""Transformer shapes for the workload model: a table of known models, a `config.json`, or a size.

The shapes are those of Llama/Mistral/Qwen-style decoders (SwiGLU MLP, RMSNorm, grouped-query
attention, head_dim = hidden / heads), the family the workload model was calibrated on
(`shared/reference/workload-model.md`, section 2). Known models live in `pipeline/data/models.csv`,
each row copied from the model's Hugging Face `config.json`.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pipeline.errors import WorkloadError

__all__ = ["Architecture", "fallback_architecture", "from_config", "known_models", "lookup_model"]

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
_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size")


@dataclass(frozen=True, slots=True)
class Architecture:
    """The shape of one decoder; `params` is P, the total parameter count.

    `hidden` and `intermediate` are floats because the fallback solves h from P (unrounded, so
    that estimates move smoothly with P); known models and configs hold integers.
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

    @property
    def kv_hidden(self) -> float:
        """h_kv = h · n_kv / n_h."""
        return self.hidden * self.kv_heads / self.heads

    @property
    def linear_params(self) -> float:
        """P_lin = L · (2h² + 2h·h_kv + 3h·I): q, k, v, o, gate, up, down (section 2)."""
        h = self.hidden
        return self.layers * (2 * h * h + 2 * h * self.kv_hidden + 3 * h * self.intermediate)

    @property
    def other_params(self) -> float:
        """P_oth = P − P_lin: embeddings, lm_head, norms (kept 16-bit under QLoRA)."""
        return max(self.params - self.linear_params, 0.0)

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    def lora_params(self, rank: int, targets: str = "all") -> float:
        """P_lora = L · r · Σ(d_in + d_out) over the adapted projections (section 3.3; Hu et al.,
        arXiv:2106.09685): all seven, or q, k, v, o only (`targets="attention"`)."""
        return self.layers * rank * self.adapter_width(targets)

    def adapter_width(self, targets: str = "all") -> float:
        """Σ(d_in + d_out) of one layer's adapted projections: 2(h+h) + 2(h+h_kv) [+ 3(h+I)]."""
        h, kv, inter = self.hidden, self.kv_hidden, self.intermediate
        attention = 2 * (h + h) + 2 * (h + kv)
        return attention if targets == "attention" else attention + 3 * (h + inter)


def _shape_params(
    hidden: float, layers: int, inter: float, vocab: int, kv_fraction: float, tied: bool
) -> float:
    linear = layers * (2 * hidden**2 + 2 * hidden * hidden * kv_fraction + 3 * hidden * inter)
    embeddings = vocab * hidden * (1 if tied else 2)
    norms = (_NORMS_PER_LAYER * layers + 1) * hidden
    return linear + embeddings + norms


def _build(
    name: str, values: Mapping[str, Any], source: str, aliases: tuple[str, ...] = ()
) -> Architecture:
    hidden, layers, inter, vocab, heads = (int(values[k]) for k in _CONFIG_KEYS)
    kv_heads = int(values.get("num_key_value_heads") or heads)
    tied = bool(values.get("tie_word_embeddings", False))
    params = _shape_params(hidden, layers, inter, vocab, kv_heads / heads, tied)
    return Architecture(
        name, hidden, layers, inter, vocab, heads, kv_heads, tied, params, source, aliases
    )


def _truthy(text: str) -> bool:
    return text.strip().lower() in {"true", "1", "yes"}


@cache
def known_models() -> tuple[Architecture, ...]:
    """The rows of `pipeline/data/models.csv`, read once on first use."""
    text = resources.files("pipeline.data").joinpath("models.csv").read_text(encoding="utf-8")
    models = []
    for row in csv.DictReader(text.splitlines()):
        values = {**row, "tie_word_embeddings": _truthy(row["tie_word_embeddings"])}
        aliases = tuple(a for a in row["aliases"].split("|") if a)
        models.append(_build(row["name"], values, row["source"], aliases))
    return tuple(models)


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
    """A known model by name or alias; `WorkloadError` on `model` with the closest names."""
    arch = _by_key().get(model_key(name))
    if arch is not None:
        return arch
    names = [a.name for a in known_models()]
    by_key = {model_key(n): n for n in names}
    matches = difflib.get_close_matches(model_key(name), list(by_key), n=3, cutoff=0.5)
    closest = [by_key[m] for m in matches]
    raise WorkloadError(
        "model",
        f"unknown model '{name}' (see GET /models; or give a config.json or params_b)",
        closest,
    )


def from_config(config: Mapping[str, Any], name: str | None = None) -> Architecture:
    """A Hugging Face `config.json` (already parsed) of a dense Llama-style decoder."""
    if not isinstance(config, Mapping):
        raise WorkloadError("config", "must be a JSON object (the model's config.json)")
    missing = [k for k in _CONFIG_KEYS if k not in config]
    if missing:
        raise WorkloadError("config", f"missing {', '.join(missing)}")
    if any(config.get(k) for k in _MOE_KEYS):
        raise WorkloadError("config", "mixture-of-experts models are not modelled yet")
    for key in (*_CONFIG_KEYS, "num_key_value_heads"):
        value = config.get(key)
        if value is None and key == "num_key_value_heads":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise WorkloadError("config", f"{key} must be a positive integer, got {value!r}")
    heads = config["num_attention_heads"]
    if config["hidden_size"] % heads or heads % (config.get("num_key_value_heads") or heads):
        raise WorkloadError(
            "config", "hidden_size must divide by num_attention_heads, and heads by KV heads"
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
