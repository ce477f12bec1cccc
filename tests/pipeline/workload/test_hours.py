"""The time model against measured fine-tuning runs, and how it moves with what it models.

The public cases are `tests/fixtures/throughput_cases.csv` (Qwen, llm-foundry, torchtune; sources
in its `source` column; how to read it: docs/pages/notes/throughput-notes.md);
`throughput_checks.csv` holds other published runs (Answer.AI FSDP-QLoRA, xtuner) kept for
checking. Each case is scored as the issue scores it: `quote --params-b P --method M --tokens T
--seq-len S --micro-batch B --gpu G --gpus N [--form-factor F] [--no-grad-ckpt]`, everything else
at its default, tokens/s = T / (fit.hours × 3600), runs on up to 8 GPUs.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass, replace

import pytest
import typer
from typer.testing import CliRunner

from api.cli.quote import quote
from pipeline.errors import WorkloadError
from pipeline.workload.fit import gpu_type, place
from pipeline.workload.hours import (
    PADDING_SLOWDOWN,
    SETUP_HOURS,
    estimate_hours,
    tokens_per_second,
)
from pipeline.workload.model import Workload
from pipeline.workload.quotes import check_hardware
from tests.conftest import FIXTURES
from tests.pipeline.workload.test_model import CATALOG, gpu, job

TOKENS = 1_000_000_000
WITHIN = 1.35
MAX_GPUS = 8


@dataclass(frozen=True)
class Case:
    case_id: str
    params_b: float
    method: str
    seq_len: int
    micro_batch: int
    grad_ckpt: bool
    gpu: str
    form_factor: str | None
    gpus: int
    measured: float

    @classmethod
    def public(cls, row: dict[str, str]) -> Case:
        return cls(
            case_id=row["case_id"],
            params_b=float(row["params_b"]),
            method=row["method"].split()[0],
            seq_len=int(row["seq_len"]),
            micro_batch=int(row["micro_batch"]),
            grad_ckpt=not row["grad_ckpt"].startswith("off"),
            gpu=row["gpu"],
            form_factor="SXM" if "SXM" in row["gpu"] else None,
            gpus=int(row["num_gpus"]),
            measured=float(row["tokens_per_s"]),
        )

    @classmethod
    def check(cls, row: dict[str, str]) -> Case:
        return replace(cls.public(row), form_factor=row["form_factor"] or None)

    def args(self) -> list[str]:
        """The command line the issue scores with."""
        args = ["--params-b", str(self.params_b), "--method", self.method]
        args += ["--tokens", str(TOKENS), "--seq-len", str(self.seq_len)]
        args += ["--micro-batch", str(self.micro_batch), "--gpu", self.gpu]
        args += ["--gpus", str(self.gpus), "--format", "json"]
        if self.form_factor:
            args += ["--form-factor", self.form_factor]
        return args + ([] if self.grad_ckpt else ["--no-grad-ckpt"])


def _read(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader((FIXTURES / name).read_text().splitlines()))


PUBLIC = [c for c in map(Case.public, _read("throughput_cases.csv")) if c.gpus <= MAX_GPUS]
CHECKS = [Case.check(row) for row in _read("throughput_checks.csv")]


@dataclass(frozen=True)
class Scored:
    case: Case
    predicted: float
    inside_range: bool
    layout: str

    @property
    def ratio(self) -> float:
        return self.predicted / self.case.measured

    @property
    def error(self) -> float:
        return max(self.ratio, 1 / self.ratio)


def score(case: Case) -> Scored:
    """What `gpuprices quote ... --gpu G --gpus N` computes (the same function the CLI calls)."""
    w = Workload.build(
        params_b=case.params_b,
        method=case.method,  # type: ignore[arg-type]
        tokens=TOKENS,
        seq_len=case.seq_len,
        micro_batch=case.micro_batch,
        grad_ckpt=case.grad_ckpt,
    )
    check = check_hardware(w, case.gpu, case.gpus, CATALOG, form_factor=case.form_factor)
    assert check.hours is not None, f"{case.case_id}: no estimate"
    measured_hours = TOKENS / case.measured / 3600
    inside = check.hours.low <= measured_hours <= check.hours.high
    return Scored(case, TOKENS / (check.hours.hours * 3600), inside, check.hours.layout)


def error_table(cases: list[Case]) -> list[Scored]:
    rows = [score(c) for c in cases]
    print(f"\n{'case':34} {'measured':>9} {'predicted':>9} {'ratio':>6} range  layout")
    for r in rows:
        mark = "in" if r.inside_range else "out"
        print(
            f"{r.case.case_id:34} {r.case.measured:9.0f} {r.predicted:9.0f} "
            f"{r.ratio:6.2f} {mark:5}  {r.layout}"
        )
    within = sum(r.error <= WITHIN for r in rows) / len(rows)
    median = statistics.median(r.error for r in rows)
    inside = sum(r.inside_range for r in rows) / len(rows)
    print(f"within ×{WITHIN}: {within:.0%}; median error ×{median:.2f}; in range {inside:.0%}")
    return rows


@pytest.mark.parametrize(("cases", "name"), [(PUBLIC, "public"), (CHECKS, "checks")])
def test_measured_runs_are_predicted_within_the_acceptance_band(
    cases: list[Case], name: str
) -> None:
    rows = error_table(cases)
    assert len(rows) == (21 if name == "public" else 9)
    assert sum(r.error <= WITHIN for r in rows) >= 0.7 * len(rows)
    assert statistics.median(r.error for r in rows) <= 1.25


def test_the_measured_value_falls_inside_hours_range_for_most_runs() -> None:
    rows = [score(c) for c in PUBLIC + CHECKS]
    assert sum(r.inside_range for r in rows) >= 0.8 * len(rows)


def cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Keep `quote` a subcommand."""

    app.command("quote")(quote)
    return app


@pytest.mark.parametrize("case_id", ["mpt7b_full_8xa100_s2048", "qwen7b_lora_s2048"])
def test_the_cli_gives_the_same_tokens_per_second_and_names_layout_and_form_factor(
    case_id: str,
) -> None:
    (case,) = [c for c in PUBLIC if c.case_id == case_id]
    result = CliRunner().invoke(cli(), ["quote", *case.args()])
    assert result.exit_code == 0, result.output
    fit = json.loads(result.stdout)["fit"]
    assert TOKENS / (fit["hours"] * 3600) == pytest.approx(score(case).predicted)
    assert fit["tokens_per_s"] == pytest.approx(score(case).predicted)
    assert fit["layout"] and fit["form_factor"] == "SXM"


def test_a_job_the_memory_model_calls_too_big_is_still_timed_and_says_how() -> None:
    # llm-foundry ran MPT-7B, micro-batch 6, no checkpointing, on 8 × A100 (FSDP full shard);
    # the conservative hf profile says it does not fit, fused kernels say it does.
    (case,) = [c for c in PUBLIC if c.case_id == "mpt7b_full_8xa100_s2048"]
    w = Workload.build(
        params_b=case.params_b,
        method="full",
        tokens=TOKENS,
        micro_batch=6,
        grad_ckpt=False,
    )
    check = check_hardware(w, "A100 80GB", 8, CATALOG)
    assert not check.fits and check.hours is not None
    assert any("only with fused kernels" in note for note in check.notes)


# --- what moves throughput -------------------------------------------------------------------


def rate(w: Workload, gpu_id: str = "A100-80GB", form: str | None = "SXM", n: int = 1) -> float:
    kind = gpu(gpu_id, form)
    memory = place(w, kind, n)
    assert memory is not None
    result = tokens_per_second(w, kind, memory)
    assert result is not None
    return result


def test_hours_are_tokens_over_throughput_with_setup_only_in_the_high_end() -> None:
    w = job(method="lora", tokens="100M", packing=True)
    kind = gpu("H100-80GB", "SXM")
    memory = place(w, kind, 1)
    assert memory is not None
    hours = estimate_hours(w, kind, memory)
    assert hours is not None
    assert hours.hours == pytest.approx(100e6 / hours.tokens_per_s / 3600)
    assert hours.low < hours.hours < hours.high
    assert hours.high > 1.3 * hours.hours + SETUP_HOURS * 0.99


def test_short_sequences_pay_per_layer_overhead_and_long_ones_attention() -> None:
    short, medium = rate(job(seq_len=256)), rate(job(seq_len=2048))
    assert short < 0.75 * medium
    h200 = "H200-141GB"
    assert rate(job(seq_len=32768), h200, None) < rate(job(seq_len=2048), h200, None)


def test_lora_is_cheaper_per_token_than_full_and_qlora_pays_dequantisation() -> None:
    full = rate(job(method="full"), "H200-141GB")
    lora = rate(job(method="lora"), "H200-141GB")
    qlora = rate(job(method="qlora"), "H200-141GB")
    assert qlora < lora and full < lora
    # dequantisation is per micro-step: a bigger micro-batch amortises it
    big = rate(job(method="qlora", micro_batch=8), "H200-141GB")
    assert big / rate(job(method="lora", micro_batch=8), "H200-141GB") > qlora / lora


def test_attention_only_lora_and_flash_attention_are_faster() -> None:
    assert rate(job(lora_targets="attention")) > rate(job())
    assert rate(job(flash_attention=False)) < rate(job())


def test_sharded_full_fine_tuning_is_slower_over_pcie_than_over_nvlink() -> None:
    w = job("Llama-3.1-8B", "full", micro_batch=2)
    assert rate(w, "A100-80GB", "PCIe", 8) < 0.8 * rate(w, "A100-80GB", "SXM", 8)


def test_qlora_beats_lora_on_a_pcie_box_where_the_sharded_base_crosses_the_bus() -> None:
    lora, qlora = job("Llama-3.1-70B", "lora"), job("Llama-3.1-70B", "qlora")
    pcie = rate(qlora, "A100-80GB", "PCIe", 8) / rate(lora, "A100-80GB", "PCIe", 8)
    sxm = rate(qlora, "A100-80GB", "SXM", 8) / rate(lora, "A100-80GB", "SXM", 8)
    assert pcie > 1 > sxm


def test_unpacked_samples_take_longer_and_unstated_packing_widens_the_range() -> None:
    kind = gpu("A100-80GB", "SXM")
    packed, padded, unstated = (job(tokens="100M", packing=p) for p in (True, False, None))
    memory = place(packed, kind, 1)
    assert memory is not None
    a, b, c = (estimate_hours(w, kind, memory) for w in (packed, padded, unstated))
    assert a is not None and b is not None and c is not None
    assert b.hours == pytest.approx(a.hours * PADDING_SLOWDOWN[1])
    assert c.hours == pytest.approx(a.hours) and c.high > a.high


def test_the_layout_is_the_first_that_fits_from_ddp_to_zero3() -> None:
    h100 = gpu("H100-80GB", "SXM")
    small, big = job("Llama-3.2-3B", "full"), job("Llama-3.1-8B", "full", micro_batch=4)
    assert place(small, h100, 8).layout == "ddp"  # type: ignore[union-attr]
    assert place(big, h100, 8).layout == "zero2"  # type: ignore[union-attr]
    assert place(job("Llama-3.1-70B", "full"), h100, 8) is None
    assert place(job("Llama-3.1-70B", "full"), h100, 24).layout == "zero3"  # type: ignore[union-attr]


def test_an_unknown_form_factor_is_timed_on_the_faster_variant_with_a_range_over_both() -> None:
    w = job("Llama-3.1-70B", "qlora", tokens="50M")
    vague = check_hardware(w, "H100-80GB", 8, CATALOG)
    sxm = check_hardware(w, "H100-80GB", 8, CATALOG, form_factor="SXM")
    pcie = check_hardware(w, "H100-80GB", 8, CATALOG, form_factor="PCIe")
    assert vague.hours is not None and sxm.hours is not None and pcie.hours is not None
    assert vague.form_factor == "SXM" and vague.hours.hours == sxm.hours.hours
    assert vague.hours.high == pytest.approx(pcie.hours.high)
    assert any("faster variant" in note for note in vague.notes)


def test_a_form_factor_the_gpu_does_not_come_in_is_refused_naming_the_field() -> None:
    with pytest.raises(WorkloadError) as info:
        check_hardware(job(), "L40S", 1, CATALOG, form_factor="SXM")
    assert info.value.field == "form_factor"


def test_gpu_type_carries_what_the_time_model_needs() -> None:
    (variant,) = [v for v in CATALOG.variants_of("H100-80GB") if str(v.form_factor) == "SXM"]
    kind = gpu_type(variant)
    assert (kind.mem_bw_gbps, kind.form_factor, kind.nvlink) == (3350, "SXM", True)


def test_a_saved_workload_alert_takes_the_same_inputs() -> None:
    from pipeline.alerts import AlertKind, Condition
    from pipeline.alerts.workloads import quote_request

    saved = {"model": "Llama-3.1-8B", "method": "lora", "tokens": "50M", "packing": True}
    saved |= {"flash_attention": False, "lora_targets": "attention"}
    condition = Condition(AlertKind.WORKLOAD, workload=saved, below_cost_usd=5.0)
    w = quote_request(condition).workload
    assert (w.packing, w.flash_attention, w.lora_targets) == (True, False, "attention")
