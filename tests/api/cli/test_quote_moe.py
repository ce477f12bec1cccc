"""`gpuprices quote` for mixture-of-experts and 2025–26 models, through typer's CliRunner over the
Vast.ai sample snapshot: ranked lists, the layout asked for, the experts' bits, and what every
quote says about its hours. Configs are `tests/fixtures/hf_configs/` (built from
`models_2026.csv`)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.api.cli import test_quote
from tests.conftest import FIXTURES

CONFIGS = FIXTURES / "hf_configs"
run = test_quote.run
snapshot = test_quote.snapshot  # the Vast.ai sample snapshot fixture
snapshot_template = test_quote.snapshot_template  # built once per module, copied per test


def quote_json(*args: str, db: str) -> dict:
    result = run(*args, "--format", "json", "--db", db)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("Qwen3-30B-A3B", "lora"),
        ("gpt-oss-20b", "qlora"),
        ("Llama-4-Scout-17B-16E", "qlora"),
        ("Gemma-3-27B", "lora"),
    ],
)
def test_the_issue_models_answer_with_a_ranked_list_saying_their_utilization_and_error(
    snapshot, name: str, method: str
):
    body = quote_json(
        "--hf-config",
        str(CONFIGS / f"{name}.json"),
        "--method",
        method,
        "--tokens",
        "100M",
        db=str(snapshot),
    )
    costs = [q["cost_usd"] for q in body["quotes"]]
    assert costs and costs == sorted(costs)
    moe = name != "Gemma-3-27B"
    assert (body["workload"]["architecture"]["num_experts"] > 0) == moe
    for q in body["quotes"]:
        assert 0 < q["utilization"] < 1
        assert f"utilization {q['utilization']:.0%}" in q["hours_basis"]
        assert "measured error" in q["hours_basis"]
        assert ("mixture-of-experts runs" in q["hours_basis"]) == moe
        if moe and q["gpus"] > 1 and q["offer"]["gpu"] == "RTX 4090":
            assert any("without NVLink" in note for note in q["notes"])


@pytest.mark.parametrize(
    ("model", "method"),
    [
        ("Qwen3-30B-A3B", "lora"),
        ("openai/gpt-oss-20b", "qlora"),
        ("Llama-4-Scout-17B-16E", "qlora"),
        ("google/gemma-3-27b-it", "lora"),
    ],
)
def test_the_issue_commands_by_catalog_name_or_hub_id_answer_with_a_ranked_list(
    snapshot, model: str, method: str
):
    args = ["--model", model, "--method", method, "--tokens", "100M", "--db", str(snapshot)]
    table = run(*args)
    assert table.exit_code == 0, table.output
    assert "offers that can run it" in table.output and "hours of #1" in table.output
    body = quote_json(*args[:-2], db=str(snapshot))
    costs = [q["cost_usd"] for q in body["quotes"]]
    assert costs and costs == sorted(costs)


def test_memory_follows_total_parameters_and_the_active_count_is_reported(snapshot):
    body = quote_json(
        "--hf-config",
        str(CONFIGS / "Qwen3-30B-A3B.json"),
        "--method",
        "lora",
        "--tokens",
        "100M",
        db=str(snapshot),
    )
    w = body["workload"]
    assert w["params_b"] == pytest.approx(30.53, abs=0.01)
    assert w["active_params_b"] == pytest.approx(3.04, abs=0.01)
    assert body["memory"]["breakdown"]["weights"] > 2 * 30.5 * 0.93  # every expert resident


def test_qlora_experts_in_sixteen_bit_need_more_gpus(snapshot):
    def weights(bits: str) -> float:
        body = quote_json(
            "--hf-config",
            str(CONFIGS / "gpt-oss-20b.json"),
            "--method",
            "qlora",
            "--tokens",
            "10M",
            "--experts-bits",
            bits,
            db=str(snapshot),
        )
        assert body["workload"]["experts_bits"] == int(bits)
        return body["memory"]["breakdown"]["weights"]

    assert weights("16") > 3 * weights("4")


def test_an_unknown_experts_bits_is_a_usage_error_naming_the_option(snapshot):
    result = run(
        "--hf-config",
        str(CONFIGS / "gpt-oss-20b.json"),
        "--method",
        "qlora",
        "--tokens",
        "10M",
        "--experts-bits",
        "8",
        "--db",
        str(snapshot),
    )
    assert result.exit_code == 2
    assert "--experts-bits" in result.output and "4, 16" in result.output
    assert "Traceback" not in result.output


def test_the_layout_asked_for_is_the_one_priced_and_timed(snapshot):
    args = ["--hf-config", str(CONFIGS / "Qwen3-30B-A3B.json"), "--method", "lora"]
    args += ["--tokens", "100M", "--gpu", "H100", "--gpus", "8"]
    layouts = {}
    for layout in ("expert-parallel", "fsdp", "ddp"):
        body = quote_json(*args, "--layout", layout, db=str(snapshot))
        assert body["workload"]["layout"] == layout
        assert body["fit"]["layout"] == body["memory"]["layout"] == layout
        layouts[layout] = body
    assert layouts["expert-parallel"]["fit"]["hours"] < layouts["fsdp"]["fit"]["hours"]
    assert (
        layouts["ddp"]["memory"]["per_gpu_gib"]
        > layouts["expert-parallel"]["memory"]["per_gpu_gib"]
    )


def test_a_layout_that_cannot_fit_says_why(snapshot):
    result = run(
        "--model",
        "Llama-3.1-70B",
        "--method",
        "full",
        "--tokens",
        "10M",
        "--gpu",
        "H100",
        "--gpus",
        "8",
        "--layout",
        "ddp",
        "--db",
        str(snapshot),
    )
    assert result.exit_code == 0, result.output
    assert "does not fit" in result.output
    assert "in layout ddp" in result.output and "whole copy" in result.output
    assert "layout auto: " in result.output


def test_expert_parallel_on_a_dense_model_is_a_usage_error_naming_layout(snapshot):
    result = run(
        "--model", "Llama-3.1-8B", "--method", "lora", "--tokens", "10M",
        "--layout", "expert-parallel", "--db", str(snapshot),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--layout" in result.output and "dense model" in result.output


def test_an_emitted_task_carries_the_moe_settings_it_was_priced_with(snapshot):
    args = ["--hf-config", str(CONFIGS / "Qwen3-30B-A3B.json"), "--method", "lora"]
    args += ["--tokens", "100M", "--layout", "expert-parallel", "--top", "50"]
    ranked = quote_json(*args, db=str(snapshot))["quotes"]
    pick, quote = next((i, q) for i, q in enumerate(ranked, 1) if q["gpus"] > 1)
    assert quote["layout"] == "expert-parallel"
    result = run(*args, "--emit", "dstack", "--pick", str(pick), "--db", str(snapshot))
    assert result.exit_code == 0, result.output
    task = yaml.safe_load(result.stdout)
    settings = json.loads(task["env"]["GPUPRICES_TRAINING"])
    assert settings["num_experts"] == 128
    assert settings["lora_exclude_modules"]  # routed experts not adapted, as priced
    assert settings["layout"] == "expert-parallel"
    assert settings["expert_parallel_size"] == settings["gpus"] == quote["gpus"]
    megatron = next(c for c in task["commands"] if "megatron.json" in c)
    assert f'"expert_model_parallel_size":{quote["gpus"]}' in megatron
