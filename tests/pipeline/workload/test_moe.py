"""Mixture-of-experts: parameter counts from the configs' own fields, memory and time against the
public measured runs.

The cases are `tests/fixtures/moe_workload_cases.csv` and `moe_throughput_cases.csv` (sources in
their `source` column; the notes on them are docs/pages/notes/moe-notes.md); rows whose source says
NOT EXPRESSIBLE need something a quote cannot state and are not scored. The configs in
`tests/fixtures/hf_configs/` are built from `tests/fixtures/models_2026.csv` (each row's fields are
those of the model's published `config.json`, its source cited there). Each case is scored as a
user would ask for it: the model's config, the method, sequence length, micro-batch, GPU count and
the layout the case maps to (`mapping: layout=...`), everything else at its default.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from pipeline.errors import WorkloadError
from pipeline.workload.architectures import Architecture, from_config, known_models
from pipeline.workload.model import Workload, estimate_memory
from pipeline.workload.quotes import check_hardware
from tests.conftest import FIXTURES
from tests.pipeline.workload.test_model import CATALOG

CONFIGS = FIXTURES / "hf_configs"
TOKENS = 1_000_000_000
MODELS_2026 = {
    # name in a case → config file (cases name fine-tunes and base checkpoints of one shape)
    "Qwen3-30B-A3B": "Qwen3-30B-A3B",
    "Qwen3-235B-A22B": "Qwen3-235B-A22B",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "Llama-4-Scout-17B-16E": "Llama-4-Scout-17B-16E",
    "GLM-4.5-Air": "GLM-4.5-Air",
}


@cache
def config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@cache
def architecture(name: str) -> Architecture:
    return from_config(config(name), name)


def _read(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader((FIXTURES / name).read_text().splitlines()))


def _expressible(row: dict[str, str]) -> bool:
    return "NOT EXPRESSIBLE" not in row["source"]


def _model_source(model: str) -> dict[str, Any]:
    base = re.sub(r" \(.*\)$", "", model)
    for prefix, name in MODELS_2026.items():
        if base.startswith(prefix):
            return {"config": config(name)}
    known = {m.name for m in known_models()}
    base = base.removesuffix("-Instruct")
    assert base in known, f"no architecture for {model}"
    return {"model": base}


def _layout(row: dict[str, str]) -> str:
    mapped = re.search(r"layout=([\w-]+)", row["source"])
    if mapped:
        return mapped.group(1)
    if row["method"].startswith("full_zero"):
        return f"zero{row['method'][-1]}"
    if "tensor parallel" in row["source"] or "Megatron (TP" in row["source"]:
        return "zero3"  # TP shards the weights over the group, memory-wise like ZeRO-3
    return "auto"


def _rank(row: dict[str, str]) -> int:
    printed = re.search(r"\br=(\d+)", row["source"])
    return int(printed.group(1)) if printed else 16


def _is_moe(row: dict[str, str]) -> bool:
    return "MoE=yes" in row["source"]


@dataclass(frozen=True)
class MemoryCase:
    case_id: str
    moe: bool
    workload: Workload
    gpus: int
    expected_gib: float
    tolerance_pct: float

    @classmethod
    def of(cls, row: dict[str, str]) -> MemoryCase:
        profile = re.search(r"profile=(\w+)", row["source"])
        method = row["method"].split("_")[0]
        targets = "attention" if "--lora-targets attention" in row["source"] else "all"
        workload = Workload.build(
            **_model_source(row["model"]),
            method=method,  # type: ignore[arg-type]
            seq_len=int(row["seq_len"]),
            micro_batch=int(row["micro_batch"]),
            grad_ckpt=row["grad_ckpt"] == "true",
            optimizer="adamw_8bit" if row["optimizer"] == "adamw_4bit" else row["optimizer"],
            lora_rank=_rank(row),
            profile=profile.group(1) if profile else "hf",
            lora_targets=targets,
            layout=_layout(row) if int(row["num_gpus"]) > 1 else "auto",
        )
        return cls(
            row["case_id"],
            _is_moe(row),
            workload,
            int(row["num_gpus"]),
            float(row["expected_mem_gb_per_gpu"]),
            float(row["tolerance_pct"]),
        )

    def estimate(self) -> tuple[float, str]:
        w = self.workload
        layout = w.layout
        memory = estimate_memory(
            w,
            self.gpus,
            zero_stage=2 if layout == "zero2" else (0 if layout == "ddp" else 3),
            expert_parallel=layout == "expert-parallel",
        )
        return memory.per_gpu_gib, memory.layout

    @property
    def error_pct(self) -> float:
        return 100 * (self.estimate()[0] - self.expected_gib) / self.expected_gib

    @property
    def within(self) -> bool:
        return abs(self.error_pct) <= self.tolerance_pct


MEMORY = [MemoryCase.of(r) for r in _read("moe_workload_cases.csv") if _expressible(r)]


def memory_table(cases: list[MemoryCase]) -> float:
    print(f"\n{'case':42} {'expected':>8} {'model':>8} {'error':>7} tol  layout")
    for c in cases:
        gib, layout = c.estimate()
        mark = "" if c.within else "  OUT"
        print(
            f"{c.case_id:42} {c.expected_gib:8.1f} {gib:8.1f} {c.error_pct:+6.1f}% "
            f"{c.tolerance_pct:3.0f}  {layout}{mark}"
        )
    share = sum(c.within for c in cases) / len(cases)
    print(f"within tolerance: {share:.0%} of {len(cases)}")
    return share


def test_the_public_moe_memory_cases_are_mostly_within_their_tolerance() -> None:
    moe = [c for c in MEMORY if c.moe]
    assert len(moe) == 12 and len(MEMORY) == 17
    assert memory_table(moe) >= 0.75
    assert memory_table(MEMORY) >= 0.75


# --- time: whole-job tokens per second ---------------------------------------------------------


@dataclass(frozen=True)
class SpeedCase:
    case_id: str
    moe: bool
    workload: Workload
    gpu: str
    gpus: int
    measured: float

    @classmethod
    def of(cls, row: dict[str, str]) -> SpeedCase:
        method = row["method"].split()[0]
        workload = Workload.build(
            **_model_source(row["model"]),
            method=method,  # type: ignore[arg-type]
            tokens=TOKENS,
            seq_len=int(row["seq_len"]),
            micro_batch=int(row["micro_batch"]),
            grad_ckpt=not row["grad_ckpt"].startswith("off"),
            layout=_layout(row) if int(row["num_gpus"]) > 1 else "auto",
        )
        return cls(
            row["case_id"],
            "(dense)" not in row["model"],
            workload,
            # the A800 is an A100 with NVLink capped at 400 GB/s; the catalog lists the A100
            row["gpu"].replace("A800", "A100"),
            int(row["num_gpus"]),
            float(row["tokens_per_s"]),
        )

    def predicted(self) -> tuple[float, str]:
        form = "SXM" if "SXM" in self.gpu else None
        check = check_hardware(self.workload, self.gpu, self.gpus, CATALOG, form_factor=form)
        assert check.hours is not None, self.case_id
        return TOKENS / (check.hours.hours * 3600), check.hours.layout

    @property
    def error(self) -> float:
        ratio = self.predicted()[0] / self.measured
        return max(ratio, 1 / ratio)


SPEED = [SpeedCase.of(r) for r in _read("moe_throughput_cases.csv") if _expressible(r)]
SPEED_CHECKS = [SpeedCase.of(r) for r in _read("moe_throughput_checks.csv")]


def speed_table(cases: list[SpeedCase]) -> tuple[float, float]:
    print(f"\n{'case':38} {'measured':>9} {'model':>9} {'ratio':>6}  layout")
    for c in cases:
        rate, layout = c.predicted()
        print(f"{c.case_id:38} {c.measured:9.0f} {rate:9.0f} {rate / c.measured:6.2f}  {layout}")
    within = sum(c.error <= 1.5 for c in cases) / len(cases)
    median = statistics.median(c.error for c in cases)
    print(f"within x1.5: {within:.0%} of {len(cases)}; median error x{median:.2f}")
    return within, median


@pytest.mark.parametrize(("name", "count"), [("public", 5), ("checks", 4)])
def test_moe_throughput_is_predicted_within_the_acceptance_band(name: str, count: int) -> None:
    cases = SPEED if name == "public" else SPEED_CHECKS
    assert len(cases) == count
    within, median = speed_table(cases)
    assert within >= 0.6
    assert median <= 1.4


# --- parameter counts and what each option changes ---------------------------------------------

PUBLISHED = {
    # total, active (B) as the cards publish them (models_2026.csv `published_*`): gpt-oss and
    # DeepSeek count active without the input embedding, Qwen with it
    "Qwen3-30B-A3B": (30.5, 3.3, True),
    "Qwen3-235B-A22B": (235.0, 22.0, True),
    "gpt-oss-20b": (20.91, 3.61, False),
    "gpt-oss-120b": (116.83, 5.13, False),
    "DeepSeek-V3": (671.0, 37.0, False),
    "Llama-4-Scout-17B-16E": (107.77, 17.0, True),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_total_and_active_parameters_from_the_config_match_the_published_counts(
    name: str,
) -> None:
    total, active, with_embedding = PUBLISHED[name]
    arch = architecture(name)
    counted = arch.active_params_incl_embedding if with_embedding else arch.active_params
    assert arch.params_b == pytest.approx(total, rel=0.03)
    assert counted / 1e9 == pytest.approx(active, rel=0.03)
    assert arch.is_moe


def test_every_2026_config_gives_the_fields_own_counts() -> None:
    rows = list(csv.DictReader((FIXTURES / "models_2026.csv").read_text().splitlines()))
    assert len(rows) == 24
    for row in rows:
        arch = architecture(row["name"])
        total, active = float(row["total_params_b"]), float(row["active_params_b"])
        assert arch.params_b == pytest.approx(total, rel=0.005, abs=0.01), row["name"]
        assert arch.active_params / 1e9 == pytest.approx(active, rel=0.005, abs=0.01)
        assert arch.is_moe == (row["kind"] == "moe")


def test_a_dense_config_with_its_own_head_dim_counts_the_wider_attention() -> None:
    qwen3 = architecture("Qwen3-0.6B")  # 16 heads of 128 on a 1024-wide model
    assert qwen3.q_hidden == 2048 and qwen3.kv_hidden == 1024
    assert qwen3.params_b == pytest.approx(0.6, abs=0.01)


def test_a_multimodal_config_is_read_from_its_text_config() -> None:
    text = config("Gemma-3-27B")
    wrapped = {"model_type": "gemma3", "text_config": text, "vision_config": {"hidden_size": 1}}
    assert from_config(wrapped).params == architecture("Gemma-3-27B").params


def moe(method: str = "lora", **options: Any) -> Workload:
    return Workload.build(config=config("Qwen3-30B-A3B"), method=method, **options)


def test_memory_follows_total_parameters_and_compute_the_active_ones() -> None:
    from pipeline.workload.hours import flops_per_token

    w = moe("full")
    dense_like = Workload.build(params_b=30.53, method="full")
    assert estimate_memory(w).states_gib == pytest.approx(
        estimate_memory(dense_like).states_gib, rel=0.01
    )
    # ≈ 6 × active per token for full training, before recompute and attention
    no_recompute = moe("full", grad_ckpt=False, seq_len=128)
    assert flops_per_token(no_recompute) / (6 * 3.35e9) == pytest.approx(1, abs=0.02)


def test_qlora_experts_in_sixteen_bit_take_several_times_the_memory() -> None:
    four = estimate_memory(moe("qlora")).per_gpu_gib
    sixteen = estimate_memory(moe("qlora", experts_bits=16)).per_gpu_gib
    assert 2.5 < sixteen / four < 4  # 2 B against 0.52 B per expert weight, plus the rest
    assert moe("qlora", experts_bits=16).trainable_params == moe("qlora").trainable_params


def test_lora_on_the_experts_trains_far_more_than_on_attention_and_shared_layers() -> None:
    attention, linear, experts = (
        moe(lora_targets=t).trainable_params for t in ("attention", "all", "experts")
    )
    assert attention == linear  # Qwen3-MoE has no dense or shared MLP: all-linear = attention
    assert experts > 50 * linear
    assert (
        estimate_memory(moe(lora_targets="experts")).per_gpu_gib
        > estimate_memory(moe()).per_gpu_gib
    )


def test_expert_parallel_splits_the_experts_and_needs_a_moe_model() -> None:
    w = moe(layout="expert-parallel")
    one, two = estimate_memory(w, 1), estimate_memory(w, 2, expert_parallel=True)
    assert two.layout == "expert-parallel"
    assert two.breakdown.weights == pytest.approx(one.breakdown.weights / 2, rel=0.05)
    with pytest.raises(WorkloadError, match="dense model") as info:
        Workload.build(model="Llama-3.1-8B", method="lora", layout="expert-parallel")
    assert info.value.field == "layout"


def test_a_large_vocabulary_counts_in_the_logits() -> None:
    gemma = Workload.build(config=config("Gemma-3-27B"), method="lora", micro_batch=4)
    qwen = Workload.build(config=config("Qwen3-32B"), method="lora", micro_batch=4)
    ratio = estimate_memory(gemma).breakdown.logits / estimate_memory(qwen).breakdown.logits
    assert ratio == pytest.approx(262208 / 151936)


def test_the_measured_error_each_quote_states_is_the_one_the_runs_give() -> None:
    from pipeline.workload.hours import MEASURED_ERROR
    from tests.pipeline.workload.test_hours import CHECKS, PUBLIC, score

    dense = [score(c).error for c in PUBLIC + CHECKS]
    moe = [c.error for c in SPEED + SPEED_CHECKS if c.moe]
    for kind, errors in (("dense", dense), ("moe", moe)):
        median, within, runs = MEASURED_ERROR[kind]
        assert runs == len(errors)
        assert median == pytest.approx(statistics.median(errors), abs=0.005), kind
        assert within == pytest.approx(sum(e <= 1.5 for e in errors) / len(errors), abs=0.005)


@pytest.mark.parametrize("arch", known_models(), ids=lambda a: a.name)
def test_every_catalog_model_fits_some_number_of_h100s_for_each_method(arch: Architecture) -> None:
    for method in ("full", "lora", "qlora"):
        w = Workload(arch=arch, method=method, tokens=TOKENS)  # type: ignore[arg-type]
        check = check_hardware(w, "H100-80GB", None, CATALOG, form_factor="SXM")
        assert check.fits and check.minimum.n_gpus is not None, (method, check.reason)
        assert check.hours is not None and check.hours.hours > 0


def test_a_moe_model_too_big_for_zero3_gathers_fits_expert_parallel() -> None:
    kimi = Workload.build(model="Kimi-K2", method="lora", tokens=TOKENS)
    check = check_hardware(kimi, "H100-80GB", None, CATALOG, form_factor="SXM")
    assert check.minimum.n_gpus is not None
    assert check.memory.layout == "expert-parallel"
