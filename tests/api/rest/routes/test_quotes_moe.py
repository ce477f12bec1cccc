"""`POST /quotes` and `/quotes/task` for a mixture-of-experts config: the layout and the experts'
bits as fields, a layout that cannot apply as a 422 naming it."""

from __future__ import annotations

import json

import yaml

from tests.api.rest.routes import test_quotes
from tests.conftest import FIXTURES

QWEN3_MOE = json.loads((FIXTURES / "hf_configs" / "Qwen3-30B-A3B.json").read_text())
quotes_client = test_quotes.quotes_client  # the app over the collected sample
JOB = {"config": QWEN3_MOE, "method": "lora", "tokens": "100M", "top": 50}


def test_the_layout_asked_for_is_the_layout_of_every_multi_gpu_quote(quotes_client):
    body = quotes_client.post("/quotes", json={**JOB, "layout": "expert-parallel"}).json()
    assert body["workload"]["layout"] == "expert-parallel"
    layouts = {q["layout"] for q in body["quotes"] if q["gpus"] > 1}
    assert layouts == {"expert-parallel"}
    for q in body["quotes"]:
        assert "assumed utilization" in q["hours_basis"] and 0 < q["utilization"] < 1


def test_expert_parallel_for_a_dense_model_is_a_422_naming_layout(quotes_client):
    response = quotes_client.post(
        "/quotes",
        json={
            "model": "Llama-3.1-8B",
            "method": "lora",
            "tokens": "10M",
            "layout": "expert-parallel",
        },
    )
    assert response.status_code == 422
    assert response.json()["detail"].startswith("layout:")


def test_experts_bits_other_than_4_or_16_are_rejected_by_the_schema(quotes_client):
    response = quotes_client.post("/quotes", json={**JOB, "method": "qlora", "experts_bits": 8})
    assert response.status_code == 422


def test_the_task_file_carries_layout_and_expert_parallel_size(quotes_client):
    ranked = quotes_client.post("/quotes", json={**JOB, "layout": "expert-parallel"}).json()
    pick = next(i for i, q in enumerate(ranked["quotes"], 1) if q["gpus"] > 1)
    response = quotes_client.post(
        "/quotes/task",
        json={**JOB, "layout": "expert-parallel", "launcher": "skypilot", "pick": pick},
    )
    assert response.status_code == 200, response.text
    task = yaml.safe_load(response.text)
    settings = json.loads(task["envs"]["GPUPRICES_TRAINING"])
    assert settings["layout"] == "expert-parallel"
    assert settings["expert_parallel_size"] == ranked["quotes"][pick - 1]["gpus"]
    assert "megatron.json" in task["setup"]


def test_the_mcp_quote_tool_takes_layout_experts_bits_and_lora_on_experts(quotes_client):
    from api.mcp import tool_list

    (tool,) = [t for t in tool_list(quotes_client.get("/openapi.json").json()) if t.name == "quote"]
    properties = tool.input_schema["properties"]
    assert "expert-parallel" in json.dumps(properties["layout"])
    assert "16" in json.dumps(properties["experts_bits"])
    assert "experts" in json.dumps(properties["lora_targets"])
