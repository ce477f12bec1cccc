"""Task files read by the launchers' own code: SkyPilot's task parser and dstack's configuration
models (in throwaway venvs, offline) accept every file we write, for every provider each
launcher supports, spot and on-demand, and read back the offer and the settings we priced."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from pipeline.catalog import get_catalog
from pipeline.errors import LauncherError
from pipeline.workload.launch import get_launcher
from pipeline.workload.model import Workload, estimate_memory
from pipeline.workload.quotes import QuoteResult
from pipeline.workload.ranking import rank_offers
from pipeline.workload.task_files import task_file
from pipeline.workload.training import TRAINING_ENV, disk_gb

OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
FULL_8B = Workload.build(model="Llama-3.1-8B", method="full", tokens="200M", micro_batch=2)

# Each provider's place as our collectors store it, and what each launcher must read back:
# (cloud, region, zone, accelerator) for SkyPilot, (backend, region, gpu name) for dstack.
PLACES = {
    "vastai": ("Texas, US", "US", "North America"),
    "runpod": ("CA-MTL-1", "CA", "North America"),
    "lambda": ("us-east-1", "US", "North America"),
    "verda": ("FIN-01", "FI", "Europe"),
    "aws": ("us-east-1", "US", "North America"),
    "azure": ("eastus", "US", "North America"),
    "gcp": ("us-central1", "US", "North America"),
    "oci": ("us-ashburn-1", "US", "North America"),
}
SKYPILOT = {
    "vastai": ("vast", "Texas, US, NA", None, "H100"),
    "runpod": ("runpod", "CA", "CA-MTL-1", "H100-SXM"),
    "lambda": ("lambda", "us-east-1", None, "H100"),
    "verda": ("verda", "FIN-01", None, "H100"),
    "aws": ("aws", "us-east-1", None, "H100"),
    "azure": ("azure", "eastus", None, "H100"),
    "gcp": ("gcp", "us-central1", None, "H100"),
    "oci": ("oci", "us-ashburn-1", None, "H100"),
}
DSTACK = {
    "vastai": ("vastai", "us-texas", "H100"),
    "runpod": ("runpod", "CA-MTL-1", "H100"),
    "lambda": ("lambda", "us-east-1", "H100"),
    "verda": ("verda", "FIN-01", "H100"),
    "aws": ("aws", "us-east-1", "H100"),
    "azure": ("azure", "eastus", "H100"),
    "gcp": ("gcp", "us-central1", "H100"),
    "oci": ("oci", "us-ashburn-1", "H100"),
}


def h100_node(provider: str, pricing: str, price: float) -> dict:
    region, country, continent = PLACES.get(provider, ("somewhere-1", "DE", "Europe"))
    return {
        "provider": provider,
        "offer_id": f"{provider}-{pricing}",
        "gpu": "H100-80GB",
        "gpu_raw": "H100 SXM",
        "form_factor": "SXM",
        "gpu_count": 8,
        "pricing": pricing,
        "price_per_hour": price,
        "price_per_gpu_hour": price / 8,
        "region": region,
        "country": country,
        "continent": continent,
        "available": True,
        "observed_at": OBSERVED_AT,
    }


def quoted(w: Workload, offers: list[dict]) -> QuoteResult:
    ranking = rank_offers(w, offers, get_catalog(), include_spot=True)
    return QuoteResult(w, estimate_memory(w, 1), ranking)


def on_each_cloud(provider: str) -> QuoteResult:
    """An on-demand and a cheaper spot 8 × H100 SXM node: quote 1 is spot, quote 2 on-demand."""
    return quoted(
        FULL_8B, [h100_node(provider, "on_demand", 20.0), h100_node(provider, "spot", 9.0)]
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, dict[tuple[str, bool], Path]]:
    """Every launcher's file for every provider it supports, spot and on-demand."""
    folder = tmp_path_factory.mktemp("tasks")
    files: dict[str, dict[tuple[str, bool], Path]] = {}
    for key in ("skypilot", "dstack"):
        files[key] = {}
        for provider in get_launcher(key).clouds:
            result = on_each_cloud(provider)
            for pick, spot in ((1, True), (2, False)):
                path = folder / f"{key}-{provider}-{'spot' if spot else 'on-demand'}.yaml"
                path.write_text(task_file(result, key, pick), encoding="utf-8")
                files[key][(provider, spot)] = path
    return files


def test_every_cloud_each_launcher_supports_has_an_expected_reading():
    assert set(get_launcher("skypilot").clouds) == set(SKYPILOT)
    assert set(get_launcher("dstack").clouds) == set(DSTACK)


def test_skypilot_parses_every_file_and_reads_back_the_offer_and_the_settings(
    written, launcher_read
):
    paths = written["skypilot"]
    read = {row["path"]: row for row in launcher_read("skypilot", paths.values())}
    assert len(read) == len(paths) == 2 * len(SKYPILOT)
    for (provider, spot), path in paths.items():
        got = read[str(path)]
        cloud, region, zone, accelerator = SKYPILOT[provider]
        assert got["version"] == get_launcher("skypilot").version
        assert got["workdir"] is not None  # train.py's folder reaches the machine
        assert (got["cloud"], got["region"], got["zone"]) == (cloud, region, zone), provider
        assert got["accelerators"] == {accelerator: 8}
        assert got["use_spot"] is spot
        assert got["disk_size"] == disk_gb(FULL_8B)
        settings = json.loads(got["envs"][TRAINING_ENV])
        assert (settings["method"], settings["layout"], settings["gpus"]) == ("full", "zero2", 8)
        assert '"stage":2' in got["setup"] and "gpuprices/deepspeed.json" in got["setup"]


def test_dstack_parses_every_file_and_reads_back_the_offer_and_the_settings(written, launcher_read):
    paths = written["dstack"]
    read = {row["path"]: row for row in launcher_read("dstack", paths.values())}
    assert len(read) == len(paths) == 2 * len(DSTACK)
    for (provider, spot), path in paths.items():
        got = read[str(path)]
        backend, region, gpu = DSTACK[provider]
        assert got["version"] == get_launcher("dstack").version
        assert got["files"] == [["train.py", "train.py"]]  # uploaded where the commands run
        assert (got["type"], got["backends"], got["regions"]) == ("task", [backend], [region])
        assert got["spot_policy"] == ("spot" if spot else "on-demand")
        assert (got["gpu_names"], got["gpu_count"]) == ([gpu], [8, 8])
        assert got["gpu_memory_gb"] == [80.0, 80.0]
        assert got["disk_gb"] == [disk_gb(FULL_8B)] * 2
        settings = json.loads(got["env"][TRAINING_ENV])
        assert (settings["micro_batch"], settings["layout"]) == (2, "zero2")
        assert any('"stage":2' in command for command in got["commands"])


def test_the_settings_are_those_the_estimate_assumed():
    result = on_each_cloud("lambda")
    quote = result.ranking.quotes[0]
    body = yaml.safe_load(task_file(result, "skypilot"))
    settings = json.loads(body["envs"][TRAINING_ENV])
    assert settings == {
        **settings,
        "model": "Llama-3.1-8B",
        "hub_id": "meta-llama/Llama-3.1-8B",
        "method": "full",
        "precision": "bf16",
        "seq_len": 2048,
        "micro_batch": 2,
        "grad_ckpt": True,
        "optimizer": "adamw",
        "lora_rank": None,
        "lora_targets": None,
        "tokens": 200_000_000,
        "layout": quote.layout,
        "gpus": 8,
    }


def test_a_qlora_job_sharded_with_fsdp_writes_the_fsdp_recipe_and_its_lora_targets():
    w = Workload.build(model="Llama-3.1-70B", method="qlora", tokens="50M", lora_rank=64)
    offer = {**h100_node("runpod", "on_demand", 20.0), "gpu": "A100-40GB", "gpu_count": 2}
    result = quoted(w, [offer])
    assert result.ranking.quotes[0].layout == "fsdp"
    body = yaml.safe_load(task_file(result, "dstack"))
    settings = json.loads(body["env"][TRAINING_ENV])
    assert settings["lora_rank"] == 64 and settings["load_in_4bit"] is True
    assert settings["lora_target_modules"] == [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"
    ]  # fmt: skip
    accelerate = next(c for c in body["commands"] if "accelerate.yaml" in c and "printf" in c)
    assert '"distributed_type":"FSDP"' in accelerate and "FULL_SHARD" in accelerate
    assert "bitsandbytes" in body["commands"][-3]


def test_a_card_without_bf16_trains_in_fp16_and_the_settings_say_so():
    w = Workload.build(model="Llama-3.1-8B", method="qlora", tokens="10M")
    offer = {**h100_node("vastai", "on_demand", 1.0), "gpu": "V100-32GB", "form_factor": None}
    settings = json.loads(
        yaml.safe_load(task_file(quoted(w, [offer]), "skypilot"))["envs"][TRAINING_ENV]
    )
    assert settings["precision"] == "fp16"
    assert settings["flash_attention"] is False  # no FlashAttention-2 on a V100


def test_comments_give_the_price_hours_cost_and_when_the_offer_was_observed():
    result = on_each_cloud("lambda")
    quote = result.ranking.quotes[1]
    text = task_file(result, "dstack", 2)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith("# gpuprices quote 2 of 2: Llama-3.1-8B full")
    assert "observed 2026-01-01T00:00:00+00:00" in header[1] and "on-demand" in header[1]
    assert f"$20.00/h x {quote.hours:.1f} h = ${quote.cost_usd:.2f}" in header[2]
    assert "checks the offer again at launch" in header[3]


def test_an_offer_on_a_cloud_the_launcher_cannot_run_names_the_clouds_it_can():
    result = on_each_cloud("coreweave")
    with pytest.raises(LauncherError) as caught:
        task_file(result, "skypilot")
    message = str(caught.value)
    assert "coreweave" in message and "SkyPilot 0.14.1 cannot launch" in message
    assert "aws, azure, gcp, lambda, oci, runpod, vastai, verda" in message
    assert "--pick" in message and caught.value.field == "pick"


def test_a_gpu_the_launcher_has_no_name_for_on_that_cloud_is_a_clear_error():
    w = Workload.build(model="Llama-3.1-8B", method="qlora", tokens="10M")
    offer = {**h100_node("runpod", "on_demand", 4.0), "gpu": "H200-141GB", "form_factor": "NVL"}
    with pytest.raises(LauncherError, match="does not name on runpod"):
        task_file(quoted(w, [offer]), "skypilot")
    assert "H200NVL" in task_file(quoted(w, [offer]), "dstack")


def test_a_pick_past_the_quotes_is_refused_naming_how_many_there_are():
    with pytest.raises(LauncherError, match="pick 3: only 2 offers can run the job"):
        task_file(on_each_cloud("aws"), "dstack", 3)


def test_a_job_no_offer_can_run_has_nothing_to_launch():
    tiny = {**h100_node("aws", "on_demand", 1.0), "gpu": "RTX 4090", "gpu_count": 1}
    with pytest.raises(LauncherError, match="nothing to launch"):
        task_file(
            quoted(Workload.build(model="Llama-3.1-70B", method="full", tokens="1M"), [tiny]),
            "skypilot",
        )


@pytest.mark.parametrize(("key", "cloud_field"), [("skypilot", "cloud"), ("dstack", "backends")])
def test_the_launchers_own_parsers_refuse_a_cloud_they_do_not_know(
    written, launcher_read, tmp_path, key, cloud_field
):
    body = yaml.safe_load(written[key][("aws", False)].read_text(encoding="utf-8"))
    if key == "skypilot":
        body["resources"]["cloud"] = "coreweave"
    else:
        body[cloud_field] = ["coreweave"]
    wrong = tmp_path / f"{key}-coreweave.yaml"
    wrong.write_text(yaml.safe_dump(body), encoding="utf-8")
    with pytest.raises(AssertionError, match="rejected a task file"):
        launcher_read(key, [wrong])


# Strings from outside (a provider's region or offer id, a config.json's `_name_or_path`) that
# would end a comment line or start a key if written raw (issue 46, finding 3).
HOSTILE = [
    "x\u2028image: attacker/pwn",
    "x\u2029privileged: true",
    "x\nnodes: 64",
    "x\r\nfile_mounts: {'/': '/'}",
    "x\x85image: attacker/pwn",
    "x # privileged: true",
    "x: y",
    "x\n---\nimage: attacker/pwn",
    "\u202eevil\x00",
]
TINY_CONFIG = {
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "intermediate_size": 5632,
    "vocab_size": 32000,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "model_type": "llama",
}
HONEST_KEYS = {
    "skypilot": {"name", "workdir", "resources", "envs", "setup", "run"},
    "dstack": {"type", "name", "backends", "regions", "spot_policy", "resources", "env", "files",
               "commands"},
}  # fmt: skip
HONEST_RESOURCES = {
    "skypilot": {"cloud", "region", "accelerators", "use_spot", "disk_size"},
    "dstack": {"gpu", "disk"},
}


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("key", ["skypilot", "dstack"])
def test_no_outside_string_changes_the_structure_of_a_task_file(key, hostile):
    w = Workload.build(config={**TINY_CONFIG, "_name_or_path": hostile}, method="lora", tokens="1M")
    offer = {**h100_node("aws", "on_demand", 4.0), "region": hostile, "offer_id": hostile}
    text = task_file(quoted(w, [offer]), key)
    body = yaml.safe_load(text)
    assert set(body) == HONEST_KEYS[key]
    assert set(body["resources"]) == HONEST_RESOURCES[key]
    region = body["resources"]["region"] if key == "skypilot" else body["regions"][0]
    assert region == hostile  # the value itself is written exactly, quoted
    env = body["envs"] if key == "skypilot" else body["env"]
    assert json.loads(env[TRAINING_ENV])["model"] == hostile
    # every line before the body is one comment line, with its breaks and controls escaped
    head = text[: text.index("\ntype:" if key == "dstack" else "\nname:") + 1]
    assert all(line.startswith("# ") for line in head.splitlines())
    assert not any(ch in head for ch in "\r\x85\u2028\u2029\u202e\x00")


def test_a_turing_card_runs_without_flash_attention_and_the_script_travels_with_the_task(
    launcher_read, tmp_path
):
    """Issue 42's acceptance: SkyPilot's own parser reads a `workdir` and FlashAttention off on
    a Turing GPU (T4, Quadro RTX 8000); an Ampere card keeps it on."""
    w = Workload.build(model="Llama-3.1-8B", method="qlora", tokens="10M")
    read_flash = {}
    for gpu in ("T4", "Quadro RTX 8000", "RTX A6000"):
        offer = {**h100_node("aws", "on_demand", 1.0), "gpu": gpu, "form_factor": None}
        path = tmp_path / f"{gpu.replace(' ', '-')}.yaml"
        path.write_text(task_file(quoted(w, [offer]), "skypilot"), encoding="utf-8")
        (got,) = launcher_read("skypilot", [path])
        assert got["workdir"] is not None
        assert "accelerate launch" in got["run"] and got["run"].rstrip().endswith("train.py")
        read_flash[gpu] = json.loads(got["envs"][TRAINING_ENV])["flash_attention"]
    assert read_flash == {"T4": False, "Quadro RTX 8000": False, "RTX A6000": True}


@pytest.mark.parametrize(
    ("key", "region", "spelled"),
    [
        ("skypilot", "', US, NA'", "SkyPilot's spelling of vastai's place \"US\""),
        ("dstack", "'us'", "dstack's spelling (from gpuhunt) of vastai's place \"US\""),
    ],
)
def test_a_region_in_the_launchers_spelling_says_so_beside_it(key, region, spelled):
    """A Vast.ai host that names only its country: SkyPilot's catalog spells it ", US, NA"."""
    offer = {**h100_node("vastai", "on_demand", 20.0), "region": "US"}
    text = task_file(quoted(FULL_8B, [offer]), key)
    (line,) = [line for line in text.splitlines() if line.startswith(f"# region {region} is ")]
    assert spelled in line
