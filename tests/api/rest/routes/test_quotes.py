"""`POST /quotes`, `GET /offers/best` and `GET /models` over the Vast.ai sample snapshot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.routes import quotes
from pipeline.settings import Settings

BREAKDOWN = {"weights", "gradients", "optimizer", "activations", "logits", "overhead"}
QLORA_70B = {"model": "Llama-3.1-70B", "method": "qlora", "tokens": "50M"}


def with_quotes(app: FastAPI) -> FastAPI:
    """The app with the quotes router, whether or not `create_app` includes it yet."""
    if not any(getattr(route, "path", None) == "/quotes" for route in app.routes):
        app.include_router(quotes.router)
    return app


@pytest.fixture
def quotes_client(collected, db_path) -> Iterator[TestClient]:
    app = with_quotes(create_app(Settings(db=db_path, scheduler=False), collected))
    with TestClient(app) as test_client:
        yield test_client


def test_a_70b_qlora_job_ranks_feasible_offers_by_total_cost(quotes_client):
    body = quotes_client.post("/quotes", json=QLORA_70B).json()
    costs = [q["cost_usd"] for q in body["quotes"]]
    assert costs == sorted(costs) and body["count"] == len(costs) >= 1
    for quote in body["quotes"]:
        assert quote["offer"]["pricing"] == "on_demand"
        assert quote["cost_usd"] == pytest.approx(quote["offer"]["price_per_hour"] * quote["hours"])
        low, high = quote["hours_range"]
        assert low < quote["hours"] < high
        assert quote["gpus"] == quote["offer"]["gpu_count"]
    eight_h100 = [q for q in body["quotes"] if q["offer"]["gpu"] == "H100-80GB"]
    assert eight_h100 and eight_h100[0]["gpus"] == 8 and eight_h100[0]["headroom"] > 0


def test_a_single_24_gb_offer_is_skipped_as_not_fitting(quotes_client):
    body = quotes_client.post("/quotes", json=QLORA_70B).json()
    (rtx_4090,) = [
        s for s in body["skipped"] if s["gpu"] == "RTX 4090" and "too few GPUs" in s["reason"]
    ]
    assert "needs at least 4 × RTX 4090" in rtx_4090["reason"]
    assert all(q["offer"]["gpu"] != "RTX 4090" for q in body["quotes"])


def test_the_answer_carries_the_normalized_workload_and_the_memory_breakdown(quotes_client):
    body = quotes_client.post("/quotes", json=QLORA_70B).json()
    assert body["workload"]["model"] == "Llama-3.1-70B"
    assert body["workload"]["tokens"] == 50_000_000
    assert body["workload"]["seq_len"] == 2048 and body["workload"]["lora_rank"] == 16
    assert set(body["memory"]["breakdown"]) == BREAKDOWN
    assert sum(body["memory"]["breakdown"].values()) == pytest.approx(body["memory"]["per_gpu_gib"])


def test_spot_offers_appear_only_when_asked_for_with_their_risk(quotes_client):
    plain = quotes_client.post("/quotes", json=QLORA_70B).json()
    assert any("spot" in s["reason"] for s in plain["skipped"])
    spot = quotes_client.post("/quotes", json={**QLORA_70B, "include_spot": True}).json()
    spot_quotes = [q for q in spot["quotes"] if q["offer"]["pricing"] == "spot"]
    assert spot_quotes and all(q["interruption_risk"] for q in spot_quotes)
    assert all(q["interruption_risk"] is None for q in plain["quotes"])


def test_a_config_json_works_for_a_model_the_table_does_not_know(quotes_client):
    config = {
        "hidden_size": 2048,
        "num_hidden_layers": 24,
        "intermediate_size": 5632,
        "vocab_size": 32000,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "model_type": "llama",
    }
    body = {"config": config, "method": "lora", "tokens": "100M"}
    response = quotes_client.post("/quotes", json=body)
    assert response.status_code == 200
    assert response.json()["workload"]["architecture"]["hidden_size"] == 2048


def test_offers_best_is_the_one_line_form_of_the_same_answer(quotes_client):
    best = quotes_client.get("/offers/best", params=QLORA_70B).json()
    full = quotes_client.post("/quotes", json=QLORA_70B).json()
    assert len(best["quotes"]) == 1
    assert best["quotes"][0] == full["quotes"][0]
    assert best["count"] == full["count"]


def test_offers_still_lists_offers_beside_offers_best(quotes_client):
    assert quotes_client.get("/offers").status_code == 200


def test_models_lists_the_known_architectures(quotes_client):
    body = quotes_client.get("/models").json()
    names = {m["name"] for m in body["models"]}
    assert {"Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Mistral-7B"} <= names
    assert {"Qwen3-30B-A3B", "gpt-oss-120b", "DeepSeek-V3", "Gemma-3-27B"} <= names
    assert body["count"] == len(body["models"])
    deepseek = next(m for m in body["models"] if m["name"] == "DeepSeek-V3")
    assert deepseek["kind"] == "moe" and deepseek["context_length"] == 163840
    assert abs(deepseek["total_params_b"] - 671) / 671 < 0.03
    assert abs(deepseek["active_params_b"] - 37) / 37 < 0.03


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"tokens": "-5M"}, "tokens"),
        ({"params_b": 0, "model": None}, "params_b"),
        ({"method": "lora", "lora_rank": 0}, "lora_rank"),
        ({"seq_len": 0}, "seq_len"),
        ({"model": "Llama-3.1-7B"}, "model"),
    ],
)
def test_impossible_workloads_are_422_naming_the_field(quotes_client, change, field):
    response = quotes_client.post("/quotes", json={**QLORA_70B, **change})
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{field}:")


def test_an_unknown_model_suggests_the_closest_known_ones(quotes_client):
    response = quotes_client.get("/offers/best", params={**QLORA_70B, "model": "Llama-3.1-7B"})
    assert response.status_code == 422
    closest = response.json()["detail"].split("closest: ")[1].split(", ")
    assert "Llama-3.1-8B" in closest


def test_an_unknown_method_is_rejected_by_the_schema(quotes_client):
    response = quotes_client.post("/quotes", json={**QLORA_70B, "method": "dora"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "method"


def test_time_model_inputs_are_accepted_and_each_quote_names_its_layout(quotes_client):
    body = {**QLORA_70B, "packing": False, "flash_attention": True, "lora_targets": "attention"}
    answer = quotes_client.post("/quotes", json=body).json()
    assert answer["workload"]["packing"] is False
    assert answer["workload"]["lora_targets"] == "attention"
    plain = quotes_client.post("/quotes", json={**QLORA_70B, "packing": True}).json()
    for quote in answer["quotes"]:
        assert quote["layout"] in {"none", "ddp", "fsdp"}
        assert quote["tokens_per_s"] > 0
        assert quote["hours"] == pytest.approx(50e6 / quote["tokens_per_s"] / 3600)
    padded = {q["offer"]["offer_id"]: q["hours"] for q in answer["quotes"]}
    assert any(padded.get(q["offer"]["offer_id"], 0) > q["hours"] for q in plain["quotes"])


def test_an_unknown_lora_target_is_rejected_by_the_schema(quotes_client):
    response = quotes_client.post("/quotes", json={**QLORA_70B, "lora_targets": "mlp"})
    assert response.status_code == 422


@pytest.mark.parametrize("launcher", ["skypilot", "dstack"])
def test_quotes_task_returns_the_file_the_cli_writes(quotes_client, db_path, launcher):
    from typer.testing import CliRunner

    from tests.api.cli.test_quote import cli

    body = {**QLORA_70B, "launcher": launcher, "pick": 2}
    response = quotes_client.post("/quotes/task", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/yaml")
    args = ["--model", "Llama-3.1-70B", "--method", "qlora", "--tokens", "50M"]
    args += ["--emit", launcher, "--pick", "2", "--db", str(db_path)]
    printed = CliRunner().invoke(cli(), ["quote", *args])
    assert printed.exit_code == 0, printed.output
    assert response.text == printed.stdout
    assert response.text.startswith("# gpuprices quote 2 of ")


def test_quotes_task_on_a_cloud_the_launcher_cannot_run_is_a_422_naming_the_clouds_it_can(
    quotes_client, warehouse
):
    from pipeline.collection.collect import run_collection
    from tests.conftest import FIXTURES, OBSERVED_AT

    run_collection(
        ["coreweave"],
        warehouse,
        replays={"coreweave": FIXTURES / "coreweave_pricing.html"},
        observed_at=OBSERVED_AT,
    )
    on_coreweave = {**QLORA_70B, "provider": "coreweave"}
    cheapest = quotes_client.post("/quotes", json=on_coreweave).json()["quotes"][0]["offer"]
    assert cheapest["provider"] == "coreweave"
    response = quotes_client.post("/quotes/task", json={**on_coreweave, "launcher": "dstack"})
    assert response.status_code == 422
    problem = response.json()
    assert "dstack 0.22.5 cannot launch" in problem["detail"]
    assert "aws, azure, gcp, lambda, oci, runpod, vastai, verda" in problem["detail"]
    assert problem["errors"][0]["field"] == "pick"


@pytest.mark.parametrize(
    ("change", "field"), [({"launcher": "slurm"}, "launcher"), ({"pick": 0}, "pick")]
)
def test_quotes_task_refuses_an_unknown_launcher_or_pick(quotes_client, change, field):
    body = {**QLORA_70B, "launcher": "skypilot", **change}
    response = quotes_client.post("/quotes/task", json=body)
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == field


def test_quotes_task_past_the_last_quote_says_how_many_there_are(quotes_client):
    body = {**QLORA_70B, "launcher": "skypilot", "pick": 500}
    response = quotes_client.post("/quotes/task", json=body)
    assert response.status_code == 422
    assert "offers can run the job" in response.json()["detail"]


HOSTILE = "\u2028image: attacker/pwn\u2029privileged: true\n---\nnodes: 64\r\n# x: y\x85"
TASK_KEYS = {
    "skypilot": {"name", "workdir", "resources", "envs", "setup", "run"},
    "dstack": {"type", "name", "backends", "regions", "spot_policy", "resources", "env", "files",
               "commands"},
}  # fmt: skip


@pytest.fixture
def hostile_snapshot(warehouse, tmp_path):
    """Vast.ai's recorded offers with line breaks and YAML syntax in every place, collected as
    any answer is (the server's store, as a CLI reads it)."""
    import orjson

    from pipeline.collection.collect import run_collection
    from tests.conftest import FIXTURES, OBSERVED_AT

    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    for offer in body["offers"]:
        offer["geolocation"] = f"Texas{HOSTILE}, US"
    replay = tmp_path / "vastai.json"
    replay.write_bytes(orjson.dumps(body))
    run_collection(["vastai"], warehouse, replays={"vastai": replay}, now=lambda: OBSERVED_AT)
    return warehouse


@pytest.mark.parametrize("launcher", ["skypilot", "dstack"])
def test_task_files_keep_their_keys_whatever_the_offers_and_the_config_say(
    hostile_snapshot, db_path, tmp_path, launcher
):
    import json

    import yaml
    from typer.testing import CliRunner

    from tests.api.cli.test_quote import cli

    config = {
        "hidden_size": 2048, "num_hidden_layers": 24, "intermediate_size": 5632,
        "vocab_size": 32000, "num_attention_heads": 32, "num_key_value_heads": 4,
        "model_type": "llama", "_name_or_path": f"org/model{HOSTILE}",
    }  # fmt: skip
    app = with_quotes(create_app(Settings(db=db_path, scheduler=False), hostile_snapshot))
    with TestClient(app) as client:
        body = {"config": config, "method": "lora", "tokens": "10M", "launcher": launcher}
        response = client.post("/quotes/task", json=body)
    assert response.status_code == 200, response.text
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    args = ["quote", "--hf-config", str(config_path), "--method", "lora", "--tokens", "10M"]
    printed = CliRunner().invoke(cli(), [*args, "--emit", launcher, "--db", str(db_path)])
    assert printed.exit_code == 0, printed.output
    for text in (response.text, printed.stdout):
        task = yaml.safe_load(text)
        assert set(task) == TASK_KEYS[launcher]
        region = task["resources"]["region"] if launcher == "skypilot" else task["regions"][0]
        assert "attacker/pwn" in region  # kept as text, its breaks stripped at ingest
        assert not any(ch in region for ch in "\n\r\x85\u2028\u2029")
        comments = [line for line in text.splitlines() if line.startswith("#")]
        assert comments and all("\\u2028" in c for c in comments if "org/model" in c)
