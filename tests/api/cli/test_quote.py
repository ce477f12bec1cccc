"""`gpuprices quote` through typer's CliRunner, over the Vast.ai sample snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx
import typer
from typer.testing import CliRunner

from api.cli.quote import quote
from pipeline.collection.collect import run_collection
from tests.conftest import FIXTURES, OBSERVED_AT, copy_of, module_template
from warehouse import Warehouse

BREAKDOWN = {"weights", "gradients", "optimizer", "activations", "logits", "overhead"}


def cli() -> typer.Typer:
    """An app with `quote` registered as `api/cli/commands.py` registers it."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Keep `quote` a subcommand."""

    app.command("quote")(quote)
    return app


def sample_snapshot(warehouse: Warehouse, _folder: Path) -> None:
    run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        observed_at=OBSERVED_AT,
    )


snapshot_template = module_template(sample_snapshot)


@pytest.fixture
def snapshot(db_path: Path, snapshot_template: Path) -> Path:
    """The sample snapshot (collected once for the module) in a database of the test's own."""
    return copy_of(snapshot_template, db_path)


def run(*args: str):
    return CliRunner().invoke(cli(), ["quote", *args])


def test_quote_json_ranks_a_70b_qlora_job_over_the_sample_snapshot(snapshot):
    result = run(
        "--model",
        "Llama-3.1-70B",
        "--method",
        "qlora",
        "--tokens",
        "50M",
        "--format",
        "json",
        "--db",
        str(snapshot),
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    costs = [q["cost_usd"] for q in body["quotes"]]
    assert costs and costs == sorted(costs)
    assert any(q["offer"]["gpu"] == "H100-80GB" and q["gpus"] == 8 for q in body["quotes"])
    for q in body["quotes"]:
        assert q["cost_usd"] == pytest.approx(q["offer"]["price_per_hour"] * q["hours"])
    assert any(s["gpu"] == "RTX 4090" and "too few GPUs" in s["reason"] for s in body["skipped"])
    assert set(body["memory"]["breakdown"]) == BREAKDOWN


def test_quote_table_lists_the_ranking_and_the_skipped_offers(snapshot):
    result = run(
        "--model", "Llama-3.1-70B", "--method", "qlora", "--tokens", "50M", "--db", str(snapshot)
    )
    assert result.exit_code == 0, result.output
    assert "offers that can run it" in result.output
    assert "skipped 1 × RTX 4090: too few GPUs" in result.output


def test_given_hardware_prints_the_memory_estimate_and_whether_it_fits_without_offers(tmp_path):
    args = (
        "--model",
        "Llama-3.1-70B",
        "--method",
        "qlora",
        "--format",
        "json",
        "--db",
        str(tmp_path / "never-opened.duckdb"),
    )
    fits = run(*args, "--gpu", "H100 SXM", "--gpus", "1")
    too_small = run(*args, "--gpu", "RTX 4090", "--gpus", "2")
    assert fits.exit_code == too_small.exit_code == 0
    fit, no_fit = json.loads(fits.stdout), json.loads(too_small.stdout)
    assert fit["fit"]["fits"] is True and fit["fit"]["gpu"] == "H100-80GB"
    assert no_fit["fit"]["fits"] is False and no_fit["fit"]["min_gpus"] == 4
    assert "fits on 4 × RTX 4090" in no_fit["fit"]["reason"]
    for body in (fit, no_fit):
        assert set(body["memory"]["breakdown"]) == BREAKDOWN
        assert body["memory"]["per_gpu_gib"] > 0
    assert not (tmp_path / "never-opened.duckdb").exists()


def test_a_family_name_checks_its_smallest_variant_and_says_so():
    result = run(
        "--model",
        "Llama-3.1-8B",
        "--method",
        "lora",
        "--gpu",
        "A100",
        "--gpus",
        "1",
        "--format",
        "json",
    )
    body = json.loads(result.stdout)
    assert body["fit"]["gpu"] == "A100-40GB"
    assert "several variants" in body["fit"]["notes"][0]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--model", "Llama-3.1-7B", "--method", "qlora", "--tokens", "1M"), "--model"),
        (("--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "-5M"), "--tokens"),
        (("--params-b", "0", "--method", "full", "--tokens", "1M"), "--params-b"),
        (
            ("--model", "Llama-3.1-8B", "--method", "lora", "--lora-rank", "0", "--tokens", "1M"),
            "--lora-rank",
        ),
        (
            ("--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", "0", "--tokens", "1M"),
            "--seq-len",
        ),
        (("--model", "Llama-3.1-8B", "--method", "lora", "--gpu", "H100", "--gpus", "3"), "--gpus"),
        (("--model", "Llama-3.1-8B", "--method", "lora", "--gpu", "H1OO", "--gpus", "1"), "--gpu"),
        (("--model", "Llama-3.1-8B", "--method", "lora"), "--tokens"),
        (("--model", "Llama-3.1-8B", "--tokens", "1M"), "--method"),
    ],
)
def test_impossible_workloads_exit_2_naming_the_option(args, option):
    result = run(*args)
    assert result.exit_code == 2
    assert f"Invalid value for {option}" in result.output


def test_an_unknown_model_suggests_the_closest_known_ones():
    result = run("--model", "Llama-3.1-7B", "--method", "qlora", "--gpu", "H100", "--gpus", "1")
    assert result.exit_code == 2
    assert "closest:" in result.output and "Llama-3.1-8B" in result.output


def test_a_config_json_file_stands_in_for_an_unknown_model(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "hidden_size": 4096,
                "num_hidden_layers": 32,
                "intermediate_size": 14336,
                "vocab_size": 128256,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
            }
        )
    )
    result = run(
        "--hf-config",
        str(config),
        "--method",
        "qlora",
        "--gpu",
        "L40S",
        "--gpus",
        "1",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["workload"]["params_b"] == pytest.approx(8.03, abs=0.01)


def test_an_8b_qlora_quote_ranks_consumer_cards_and_quotes_a_turing_card_in_fp16(snapshot):
    job = ("--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "10M")
    args = (*job, "--db", str(snapshot))
    body = json.loads(run(*args, "--format", "json").stdout)
    ranked = [q["offer"]["gpu"] for q in body["quotes"]]
    assert ranked[:2] == ["RTX 5090", "RTX 4090"]
    turing = next(q for q in body["quotes"] if q["offer"]["gpu"] == "Quadro RTX 8000")
    assert turing["notes"] == [
        "precision fp16 with loss scaling: Quadro RTX 8000 has no BF16",
        "no FlashAttention-2 on Quadro RTX 8000: attention scores kept in memory",  # Turing
    ]
    table = run(*args).output
    rank = ranked.index("Quadro RTX 8000") + 1
    assert f"#{rank}: precision fp16 with loss scaling: Quadro RTX 8000 has no BF16" in table


def test_form_factor_sets_the_variant_and_the_quote_names_layout_and_form_factor():
    base = ("--model", "Llama-3.1-8B", "--method", "full", "--tokens", "100M", "--format", "json")
    hardware = ("--gpu", "H100 80GB", "--gpus", "8")
    body = json.loads(run(*base, *hardware).stdout)
    vague = body["fit"]
    assert vague["fits"] and body["memory"]["layout"] == vague["layout"]
    pcie = json.loads(run(*base, *hardware, "--form-factor", "pcie").stdout)["fit"]
    assert vague["form_factor"] == "SXM" and pcie["form_factor"] == "PCIe"
    assert vague["hours"] < pcie["hours"] and vague["hours_range"][1] >= pcie["hours"]
    assert vague["layout"] == pcie["layout"] == "zero2"
    assert any("faster variant" in note for note in vague["notes"])


@pytest.mark.parametrize(
    "extra",
    [("--form-factor", "SXM"), ("--gpu", "L40S", "--gpus", "1", "--form-factor", "SXM")],
)
def test_a_form_factor_without_gpu_or_that_the_gpu_lacks_exits_2(extra):
    result = run("--model", "Llama-3.1-8B", "--method", "lora", "--tokens", "1M", *extra)
    assert result.exit_code == 2
    assert "Invalid value for --form-factor" in result.output


def test_packing_flash_attention_and_lora_targets_reach_the_workload():
    result = run(
        "--model",
        "Llama-3.1-8B",
        "--method",
        "lora",
        "--tokens",
        "10M",
        "--gpu",
        "A100-80GB",
        "--gpus",
        "1",
        "--no-packing",
        "--no-flash-attention",
        "--lora-targets",
        "attention",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    workload = json.loads(result.stdout)["workload"]
    assert (workload["packing"], workload["flash_attention"], workload["lora_targets"]) == (
        False,
        False,
        "attention",
    )


QLORA_70B_ARGS = ("--model", "Llama-3.1-70B", "--method", "qlora", "--tokens", "50M")


def first_quote(snapshot: Path) -> dict:
    result = run(*QLORA_70B_ARGS, "--format", "json", "--db", str(snapshot))
    body = json.loads(result.stdout)
    return {"workload": body["workload"], **body["quotes"][0]}


def test_emit_skypilot_writes_a_task_skypilot_reads_as_the_first_quote(
    snapshot, tmp_path, launcher_read
):
    result = run(*QLORA_70B_ARGS, "--emit", "skypilot", "--db", str(snapshot))
    assert result.exit_code == 0, result.output
    task = tmp_path / "task.yaml"
    task.write_text(result.stdout, encoding="utf-8")
    (read,) = launcher_read("skypilot", [task])
    first = first_quote(snapshot)
    offer, w = first["offer"], first["workload"]
    assert offer["provider"] == "vastai" and read["cloud"] == "vast"
    # Vast.ai's geolocation and continent code as SkyPilot's catalog writes them (", US, NA")
    assert offer["region"] == "US" and read["region"] == ", US, NA"
    assert read["accelerators"] == {"RTX8000": offer["gpu_count"]}  # Quadro RTX 8000
    assert read["use_spot"] is (offer["pricing"] == "spot")
    settings = json.loads(read["envs"]["GPUPRICES_TRAINING"])
    for field in ("method", "seq_len", "micro_batch", "grad_ckpt", "lora_rank", "lora_targets"):
        assert settings[field] == w[field], field
    assert settings["layout"] == first["layout"] and settings["gpus"] == first["gpus"]
    assert settings["precision"] == "fp16"  # the Quadro RTX 8000 has no BF16
    assert any("fp16" in note for note in first["notes"])


def test_emit_dstack_writes_a_task_dstack_reads_as_the_first_quote(
    snapshot, tmp_path, launcher_read
):
    result = run(*QLORA_70B_ARGS, "--emit", "dstack", "--db", str(snapshot))
    assert result.exit_code == 0, result.output
    task = tmp_path / "task.dstack.yml"
    task.write_text(result.stdout, encoding="utf-8")
    (read,) = launcher_read("dstack", [task])
    first = first_quote(snapshot)
    offer, w = first["offer"], first["workload"]
    assert (read["type"], read["backends"]) == ("task", ["vastai"])
    assert read["regions"] == [offer["region"].lower()]
    assert read["gpu_names"] == ["QRTX8000"] and read["gpu_count"] == [offer["gpu_count"]] * 2
    assert read["spot_policy"] == ("spot" if offer["pricing"] == "spot" else "on-demand")
    settings = json.loads(read["env"]["GPUPRICES_TRAINING"])
    for field in ("method", "seq_len", "micro_batch", "grad_ckpt", "lora_rank", "lora_targets"):
        assert settings[field] == w[field], field
    assert settings["layout"] == first["layout"]


def test_emit_pick_writes_another_quote(snapshot):
    result = run(*QLORA_70B_ARGS, "--emit", "dstack", "--pick", "2", "--db", str(snapshot))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# gpuprices quote 2 of ")


def test_an_offer_on_a_cloud_the_launcher_cannot_run_is_one_line_and_exit_1(db_path):
    with Warehouse.open(db_path) as warehouse:
        run_collection(
            ["coreweave"],
            warehouse,
            replays={"coreweave": FIXTURES / "coreweave_pricing.html"},
            observed_at=OBSERVED_AT,
        )
    result = run(*QLORA_70B_ARGS, "--emit", "skypilot", "--db", str(db_path))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: quote 1 is on coreweave")
    assert "aws, azure, gcp, lambda, oci, runpod, vastai, verda" in lines[0]
    assert "--pick" in lines[0] and result.stdout == ""


def test_emit_with_given_hardware_is_a_usage_error():
    result = run(*QLORA_70B_ARGS, "--gpu", "H100", "--gpus", "8", "--emit", "skypilot")
    assert result.exit_code == 2 and "Invalid value for --emit" in result.output


# --- any Hugging Face id (the Hub: a respx mock at HF_ENDPOINT) ----------------------------------

HUB = "http://127.0.0.1:9/hub"
TINY = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
TINY_BODY = (
    FIXTURES / "hf_configs" / "TinyLlama--TinyLlama-1.1B-Chat-v1.0.config.json"
).read_bytes()


def hub_run(*args: str, token: str = ""):
    env = {"HF_ENDPOINT": HUB, "HF_TOKEN": token}
    return CliRunner().invoke(cli(), ["quote", *args], env=env)


def test_a_hugging_face_id_is_fetched_once_then_quoted_from_the_kept_config(snapshot):
    job = ("--model", TINY, "--method", "lora", "--tokens", "50M", "--db", str(snapshot))
    with respx.mock(assert_all_mocked=True) as hub:
        route = hub.get(f"{HUB}/{TINY}/resolve/main/config.json").mock(
            return_value=httpx.Response(200, content=TINY_BODY)
        )
        first = hub_run(*job, "--format", "json", token="hf_cli_token")
        second = hub_run(*job)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["workload"]["model"] == TINY
    assert second.exit_code == 0, second.output and TINY in second.output
    assert route.call_count == 1
    assert route.calls.last.request.headers["Authorization"] == "Bearer hf_cli_token"
    assert "hf_cli_token" not in first.output + second.output


@pytest.mark.parametrize(
    ("status", "words"),
    [(404, "no model 'nobody/nothing' on the Hugging Face Hub"), (401, "set HF_TOKEN")],
)
def test_a_missing_or_gated_id_is_one_usage_line(snapshot, status, words):
    with respx.mock(assert_all_mocked=True) as hub:
        hub.get(f"{HUB}/nobody/nothing/resolve/main/config.json").mock(
            return_value=httpx.Response(status)
        )
        result = hub_run(
            "--model", "nobody/nothing", "--method", "lora", "--tokens", "5M", "--db", str(snapshot)
        )
    assert result.exit_code == 2
    assert "Invalid value for --model" in result.output and words in result.output
    assert "Traceback" not in result.output


def test_no_network_names_hf_config(snapshot):
    with respx.mock(assert_all_mocked=True) as hub:
        hub.get(f"{HUB}/{TINY}/resolve/main/config.json").mock(
            side_effect=httpx.ConnectError("unreachable")
        )
        result = hub_run(
            "--model", TINY, "--method", "lora", "--tokens", "5M", "--db", str(snapshot)
        )
    assert result.exit_code == 2 and "--hf-config" in result.output


def test_an_unusable_config_file_names_hf_config_not_the_settings_file(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 4096}))
    result = run("--hf-config", str(config), "--method", "lora", "--gpu", "L40S", "--gpus", "1")
    assert result.exit_code == 2
    assert "Invalid value for --hf-config" in result.output and "missing" in result.output
