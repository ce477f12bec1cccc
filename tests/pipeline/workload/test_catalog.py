"""The model catalog (`pipeline/data/models.csv`): each row is its model's config.json read by
`from_config`, and its counts are the model cards' within 3 %."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipeline.errors import WorkloadError
from pipeline.workload.architectures import KnownModel, catalog, from_config, lookup_model
from tests.conftest import FIXTURES

TOLERANCE = 0.03
"""Issue 43: total and active parameters within 3 % of the published counts."""
CONFIGS = FIXTURES / "hf_configs"
ISSUE_MODELS = [
    "Qwen3-0.6B",
    "Qwen3-1.7B",
    "Qwen3-4B",
    "Qwen3-8B",
    "Qwen3-14B",
    "Qwen3-32B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "Llama-4-Scout-17B-16E",
    "Llama-4-Maverick-17B-128E",
    "Gemma-3-1B",
    "Gemma-3-4B",
    "Gemma-3-12B",
    "Gemma-3-27B",
    "Mistral-Small-3.1-24B",
    "Phi-4",
    "Phi-4-mini",
    "SmolLM3-3B",
    "DeepSeek-V3",
    "DeepSeek-R1",
    "GLM-4.5",
    "GLM-4.5-Air",
    "Kimi-K2",
]


def recorded(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CONFIGS / f"{name}.config.json").read_text())
    return body


def known(name: str) -> KnownModel:
    return next(m for m in catalog() if m.arch.name == name)


def test_the_catalog_holds_the_2025_26_models_beside_the_18_kept() -> None:
    names = [m.arch.name for m in catalog()]
    assert set(ISSUE_MODELS) <= set(names)
    assert len(names) == 18 + len(ISSUE_MODELS) == len(set(names))


@pytest.mark.parametrize("model", catalog(), ids=lambda m: m.arch.name)
def test_each_total_is_the_model_cards_within_three_percent(model: KnownModel) -> None:
    total_b = model.arch.params_b + model.vision_params_b
    assert total_b == pytest.approx(model.published_total_b, rel=TOLERANCE)


@pytest.mark.parametrize(
    "model", [m for m in catalog() if m.arch.is_moe], ids=lambda m: m.arch.name
)
def test_each_moe_active_count_is_the_cards_as_the_card_counts_it(model: KnownModel) -> None:
    assert model.published_active_b is not None and model.published_active_computed is not None
    assert model.published_active_computed / 1e9 == pytest.approx(
        model.published_active_b, rel=TOLERANCE
    )
    assert model.arch.active_params_incl_embedding < model.arch.params


@pytest.mark.parametrize(
    ("name", "total_b", "active_b", "counts"),
    [
        # Qwen's card counts the embeddings in its 3.3B (non-embedding total: 29.9B)
        ("Qwen3-30B-A3B", 30.5, 3.3, "all"),
        # OpenAI's card leaves out the input embedding (the unembedding is counted)
        ("gpt-oss-120b", 116.8, 5.1, "no_input_embedding"),
        ("DeepSeek-V3", 671, 37, "all"),
    ],
)
def test_the_issues_three_counts(name: str, total_b: float, active_b: float, counts: Any) -> None:
    model = known(name)
    assert model.arch.params_b == pytest.approx(total_b, rel=TOLERANCE)
    assert model.active_params_counting(counts) / 1e9 == pytest.approx(active_b, rel=TOLERANCE)
    assert model.published_active_counts == counts


def test_dense_models_use_every_parameter_and_moe_models_a_fraction() -> None:
    dense, moe = lookup_model("Qwen3-8B"), lookup_model("Qwen3-30B-A3B")
    assert not dense.is_moe and dense.active_params_incl_embedding == dense.params
    assert moe.is_moe and (moe.experts, moe.experts_per_token) == (128, 8)
    assert moe.active_params_incl_embedding / moe.params == pytest.approx(3.35 / 30.53, rel=0.01)


@pytest.mark.parametrize(
    ("asked", "name"),
    [
        ("openai/gpt-oss-20b", "gpt-oss-20b"),
        ("GPT-OSS-20B", "gpt-oss-20b"),
        ("qwen3-30b-a3b", "Qwen3-30B-A3B"),
        ("Qwen/Qwen3-8B", "Qwen3-8B"),
        ("google/gemma-3-27b-it", "Gemma-3-27B"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout-17B-16E"),
        ("Llama-4-Scout", "Llama-4-Scout-17B-16E"),
        ("deepseek-ai/DeepSeek-R1", "DeepSeek-R1"),
        ("moonshotai/Kimi-K2-Instruct", "Kimi-K2"),
    ],
)
def test_a_model_is_found_by_name_case_insensitively_or_by_hub_id(asked: str, name: str) -> None:
    assert lookup_model(asked).name == name


def test_every_catalog_hub_id_finds_its_own_row() -> None:
    for model in catalog():
        assert model.hub_id is not None
        assert lookup_model(model.hub_id) is model.arch


@pytest.mark.parametrize(
    ("recording", "name"),
    [
        ("openai--gpt-oss-120b", "gpt-oss-120b"),
        ("zai-org--GLM-4.5-Air", "GLM-4.5-Air"),
        ("microsoft--phi-4", "Phi-4"),
    ],
)
def test_a_recorded_config_json_reads_as_its_catalog_row(recording: str, name: str) -> None:
    """One path: the config.json itself (MoE fields under the model's own names) and the row."""
    fetched, row = from_config(recorded(recording)), lookup_model(name)
    assert fetched.params == pytest.approx(row.params, rel=1e-12)
    assert (fetched.experts, fetched.experts_per_token, fetched.moe_layers) == (
        row.experts,
        row.experts_per_token,
        row.moe_layers,
    )
    assert fetched.context_length == row.context_length
    assert fetched.active_params == pytest.approx(row.active_params, rel=1e-12)


def test_a_llama_4_text_config_names_the_expert_width_intermediate_size() -> None:
    """Llama 4's config.json: `intermediate_size` is the experts' width, `intermediate_size_mlp`
    the dense layers', one shared expert per MoE layer, MoE on every second layer (Maverick)."""
    text = {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "vocab_size": 202048,
        "num_local_experts": 128,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "max_position_embeddings": 1048576,
    }
    arch = from_config({"model_type": "llama4", "text_config": text})
    row = lookup_model("Llama-4-Maverick-17B-128E")
    assert arch.params == pytest.approx(row.params, rel=1e-12)
    assert (arch.experts, arch.moe_layers, arch.intermediate) == (row.experts, 24, 16384)


def test_a_gemma_3_text_config_gets_the_defaults_the_file_leaves_out() -> None:
    text = {
        "model_type": "gemma3_text",
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "head_dim": 128,
    }
    arch = from_config({"model_type": "gemma3", "text_config": text})
    row = lookup_model("Gemma-3-27B")
    assert (arch.vocab, arch.tied_embeddings) == (262_208, True)
    assert arch.params == pytest.approx(row.params, rel=1e-12)


def test_a_head_width_other_than_hidden_over_heads_counts() -> None:
    """Qwen3-0.6B: 16 heads of 128 make queries 2048 wide on a 1024-wide model."""
    arch = lookup_model("Qwen3-0.6B")
    assert (arch.q_hidden, arch.kv_hidden) == (2048, 1024)
    assert arch.params_b == pytest.approx(0.596, abs=0.001)


def test_an_moe_config_with_more_experts_per_token_than_experts_is_refused() -> None:
    config = {**recorded("openai--gpt-oss-120b"), "num_experts_per_tok": 200}
    with pytest.raises(WorkloadError, match="more than") as info:
        from_config(config)
    assert info.value.field == "config"
