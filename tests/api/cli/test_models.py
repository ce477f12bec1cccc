"""`gpuprices models`: the catalog as a table and as JSON, the same as `GET /models`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from api.cli.commands import app
from api.rest.schemas_models import models_page


def test_models_json_gives_total_and_active_parameters_kind_and_context() -> None:
    result = CliRunner().invoke(app, ["models", "--format", "json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body == models_page().model_dump(mode="json")
    by_name = {m["name"]: m for m in body["models"]}
    qwen = by_name["Qwen3-30B-A3B"]
    assert (qwen["kind"], qwen["hub_id"], qwen["context_length"]) == (
        "moe",
        "Qwen/Qwen3-30B-A3B",
        40960,
    )
    assert abs(qwen["total_params_b"] - 30.5) / 30.5 < 0.03
    assert abs(qwen["active_params_b"] - 3.3) / 3.3 < 0.03
    oss = by_name["gpt-oss-120b"]
    assert abs(oss["active_params_b_without_input_embedding"] - 5.1) / 5.1 < 0.03
    assert oss["experts"]["num_experts"] == 128 and oss["experts"]["num_experts_per_tok"] == 4
    dense = by_name["Llama-3.1-8B"]
    assert dense["kind"] == "dense" and dense["experts"] is None
    assert dense["active_params_b"] == dense["total_params_b"]
    assert all(m["source"] and m["context_length"] for m in body["models"])


def test_models_table_lists_every_model_with_its_hub_id() -> None:
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"{models_page().count} models" in result.output
    assert "openai/gpt-oss-20b" in result.output and "moe 4/32" in result.output
