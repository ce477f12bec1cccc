"""The workload model against the measured cases, its own worked examples, and its invariants."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipeline.catalog import get_catalog
from pipeline.errors import PipelineError, WorkloadError
from pipeline.workload.architectures import (
    FALLBACK_LAYERS,
    fallback_architecture,
    from_config,
    known_models,
    lookup_model,
)
from pipeline.workload.fit import GpuType, gpu_type, min_gpus, place
from pipeline.workload.hours import estimate_hours, flops_per_token
from pipeline.workload.model import (
    GIB,
    GPU_COUNTS,
    USABLE_VRAM_FRACTION,
    Workload,
    estimate_memory,
    parse_tokens,
)
from pipeline.workload.precision import peak_tflops, runs_in_fp16
from pipeline.workload.ranking import SPOT_RISK, rank_offers
from tests.conftest import FIXTURES

CATALOG = get_catalog()


def gpu(gpu_id: str, form_factor: str | None = None) -> GpuType:
    variants = [
        v
        for v in CATALOG.variants_of(gpu_id)
        if form_factor is None or str(v.form_factor) == form_factor
    ]
    return gpu_type(variants[0])


def job(model: str = "Llama-3.1-8B", method: str = "lora", **options: Any) -> Workload:
    return Workload.build(model=model, method=method, **options)  # type: ignore[arg-type]


# --- the validation set: tests/fixtures/workload_cases.csv (docs/pages/notes/workload-model.md) -

CASES = list(csv.DictReader((FIXTURES / "workload_cases.csv").read_text().splitlines()))
# Ranks the sources used when they do not print one (workload-model.md section 6).
RANK_BY_SOURCE_PREFIX = {"lf_": 8, "qwen": 64, "tt_lora_llama31_8b": 8, "tt_qlora_llama31_8b": 8}


def case_rank(case: dict[str, str]) -> int:
    printed = re.search(r"\br=(\d+)", case["source"])
    if printed:
        return int(printed.group(1))
    prefixes = [p for p in RANK_BY_SOURCE_PREFIX if case["case_id"].startswith(p)]
    return RANK_BY_SOURCE_PREFIX[prefixes[0]] if prefixes else 16


def case_estimate(case: dict[str, str]) -> float:
    """GiB per GPU as the case means it: `states-only` compares model states alone."""
    profile = re.search(r"profile=([\w-]+)", case["source"]).group(1)  # type: ignore[union-attr]
    method, stage = case["method"], 3
    if method.startswith("full_zero"):
        method, stage = "full", int(method[-1])
    known = {m.name for m in known_models()}
    source = (
        {"model": case["model"]}
        if case["model"] in known
        else {"params_b": float(case["params_b"])}
    )
    w = Workload.build(
        **source,
        method=method,  # type: ignore[arg-type]
        precision=case["precision"],
        seq_len=int(case["seq_len"]) or 2048,  # seq_len 0: states only, any length will do
        micro_batch=int(case["micro_batch"]) or 1,
        grad_ckpt=case["grad_ckpt"] == "true",
        optimizer=case["optimizer"],
        lora_rank=case_rank(case),
        profile="hf" if profile == "states-only" else profile,
    )
    memory = estimate_memory(w, int(case["num_gpus"]), zero_stage=stage)  # type: ignore[arg-type]
    return memory.states_gib if profile == "states-only" else memory.per_gpu_gib


@pytest.mark.parametrize("case", CASES, ids=[c["case_id"] for c in CASES])
def test_each_reference_case_is_reproduced_within_its_tolerance(case: dict[str, str]) -> None:
    expected = float(case["expected_mem_gb_per_gpu"])
    error_pct = 100 * (case_estimate(case) - expected) / expected
    assert abs(error_pct) <= float(case["tolerance_pct"]), f"{error_pct:+.1f}%"


def test_reference_cases_have_a_median_error_under_ten_percent() -> None:
    errors = sorted(
        abs(case_estimate(c) - float(c["expected_mem_gb_per_gpu"]))
        / float(c["expected_mem_gb_per_gpu"])
        for c in CASES
    )
    assert len(errors) == 20
    assert errors[len(errors) // 2] < 0.10


# --- the note's own worked examples (workload-model.md sections 3.8 and 4.2) -----------------


@pytest.mark.parametrize(
    ("model", "method", "seq_len", "micro_batch", "gib"),
    [
        ("Llama-3.1-8B", "qlora", 2048, 4, 24.4),
        ("Llama-3.1-8B", "lora", 2048, 4, 34.5),
        ("Llama-3.1-8B", "full", 2048, 4, 143.8),
        ("Mistral-7B", "lora", 4096, 2, 22.9),
        ("Qwen2.5-14B", "qlora", 4096, 1, 22.6),
        ("Llama-3.1-70B", "qlora", 2048, 1, 49.7),
    ],
)
def test_single_gpu_memory_matches_the_worked_examples(
    model: str, method: str, seq_len: int, micro_batch: int, gib: float
) -> None:
    w = job(model, method, seq_len=seq_len, micro_batch=micro_batch)
    assert estimate_memory(w).per_gpu_gib == pytest.approx(gib, abs=0.05)


def test_logits_dominate_an_eight_b_qlora_job_with_a_large_vocabulary() -> None:
    memory = estimate_memory(job(method="qlora", micro_batch=4))
    assert memory.breakdown.logits == pytest.approx(11.7, abs=0.05)


@pytest.mark.parametrize(
    ("gpu_id", "form_factor", "expected"),
    [("H100-80GB", "SXM", 24), ("H200-141GB", "SXM", 16), ("B200", None, 8), ("MI300X", None, 8)],
)
def test_llama_70b_full_fine_tune_needs_the_documented_gpu_counts(
    gpu_id: str, form_factor: str | None, expected: int
) -> None:
    w = job("Llama-3.1-70B", "full", seq_len=4096)
    assert estimate_memory(w).states_gib == pytest.approx(1051, abs=1)
    assert min_gpus(w, gpu(gpu_id, form_factor)).n_gpus == expected


@pytest.mark.parametrize(
    ("w", "gpu_id", "expected"),
    [
        (job(method="qlora", micro_batch=4), "RTX 4090", 2),
        (job(method="qlora", micro_batch=4, profile="fused"), "RTX 4090", 1),
        (job(method="qlora", micro_batch=4), "L40S", 1),
        (job(method="full", micro_batch=4), "A100-80GB", 4),
        (job(method="full", micro_batch=4), "H200-141GB", 2),
        (job(method="full", micro_batch=4), "B200", 1),
        (job("Llama-3.1-70B", "qlora"), "A100-80GB", 1),
        (job("Llama-3.1-70B", "qlora"), "L40S", 2),
        (job("Llama-3.1-70B", "qlora"), "RTX 4090", 4),
    ],
)
def test_minimum_gpu_counts_match_the_worked_examples(
    w: Workload, gpu_id: str, expected: int
) -> None:
    assert min_gpus(w, gpu(gpu_id)).n_gpus == expected


def test_flops_per_token_of_an_eight_b_lora_job_match_the_note() -> None:
    assert flops_per_token(job(method="lora")) == pytest.approx(5.06e10, rel=0.005)


# --- architectures -----------------------------------------------------------------------------

LLAMA_31_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "model_type": "llama",
}


# Each catalog model's published counts: tests/pipeline/workload/test_catalog.py.


def test_the_issue_lists_models_are_all_known() -> None:
    for name in (
        "Llama-2-7B",
        "Llama-2-13B",
        "Llama-3.1-8B",
        "Llama-3.1-70B",
        "Llama-3.2-3B",
        "Mistral-7B",
        "Qwen2.5-7B",
        "Qwen2.5-14B",
        "Qwen2.5-72B",
    ):
        assert lookup_model(name).name == name


def test_hugging_face_ids_and_instruct_names_resolve_to_the_base_model() -> None:
    assert lookup_model("meta-llama/Meta-Llama-3.1-8B-Instruct").name == "Llama-3.1-8B"
    assert lookup_model("qwen2.5-7b-instruct").name == "Qwen2.5-7B"


def test_a_config_json_gives_the_same_shape_as_the_table() -> None:
    arch = from_config(LLAMA_31_8B_CONFIG)
    assert arch.params == pytest.approx(lookup_model("Llama-3.1-8B").params)
    assert arch.name == "llama"


def test_the_fallback_architecture_adds_up_to_the_requested_size() -> None:
    for params_b in (0.5, 3.0, 7.0, 13.0, 34.0, 70.0, 180.0):
        arch = fallback_architecture(params_b)
        assert arch.linear_params + arch.other_params == pytest.approx(params_b * 1e9, rel=1e-9)
        assert arch.layers == next(n for limit, n in FALLBACK_LAYERS if params_b <= limit)
        assert arch.kv_heads * 4 == arch.heads


def test_qlora_keeps_embeddings_in_sixteen_bit() -> None:
    w = job(method="qlora")
    weights = estimate_memory(w).breakdown.weights * GIB - 4 * w.arch.lora_params(16)
    expected = w.arch.linear_params * 4.127 / 8 + 2 * w.arch.other_params
    assert weights == pytest.approx(expected)
    assert w.arch.other_params == pytest.approx(1.05e9, rel=0.01)


# --- breakdown, sharding and fit ---------------------------------------------------------------


def test_breakdown_adds_up_to_the_total() -> None:
    for n in (1, 2, 8, 64):
        memory = estimate_memory(job(method="full"), n)
        assert memory.breakdown.total == pytest.approx(memory.per_gpu_gib)


def test_full_fine_tuning_on_several_gpus_shards_with_zero3() -> None:
    one, eight = estimate_memory(job(method="full"), 1), estimate_memory(job(method="full"), 8)
    assert (one.sharding, eight.sharding) == ("none", "zero3")
    assert eight.breakdown.optimizer == pytest.approx(one.breakdown.optimizer / 8)
    assert eight.breakdown.activations == one.breakdown.activations


def test_an_infeasible_job_says_why_and_what_would_make_it_fit() -> None:
    fit = min_gpus(job(method="lora", seq_len=131072), gpu("RTX 4090"))
    assert fit.n_gpus is None
    assert "activations and logits alone" in (fit.reason or "")
    assert fit.suggestions and all("RTX 4090" in s for s in fit.suggestions)


def test_a_bf16_job_on_a_t4_runs_in_fp16_with_the_same_memory_and_the_fp16_peak() -> None:
    t4 = gpu("T4")
    assert runs_in_fp16(job(), t4) and not runs_in_fp16(job(), gpu("RTX 3090"))
    assert min_gpus(job(), t4).n_gpus == min_gpus(job(precision="fp16"), t4).n_gpus == 2
    assert peak_tflops(job(), t4) == t4.fp16_tflops == 65


def test_pure_bf16_weights_cannot_fall_back_to_fp16() -> None:
    fit = min_gpus(job(pure_bf16=True), gpu("T4"))
    assert fit.n_gpus is None and "no BF16" in (fit.reason or "")
    assert fit.suggestions == ("precision fp16: 2 × T4",)


def test_an_mi250_offer_counts_as_two_64_gb_devices() -> None:
    mi250 = gpu("MI250")
    assert (mi250.vram_gb, mi250.devices_per_gpu) == (64, 2)
    (quote,) = rank_offers(QLORA_70B, [offer("MI250", 1, 2.0)], CATALOG).quotes
    memory = place(QLORA_70B, mi250, 2)
    assert memory is not None and memory.n_gpus == 2
    hours = estimate_hours(QLORA_70B, mi250, memory)
    assert quote.gpus == 1 and hours is not None and quote.hours == hours.hours


def test_gpu_counts_are_one_two_four_then_multiples_of_eight() -> None:
    assert GPU_COUNTS[:5] == (1, 2, 4, 8, 16)
    assert GPU_COUNTS[-1] == 1024 and all(n % 8 == 0 for n in GPU_COUNTS[3:])


# --- properties ---------------------------------------------------------------------------------

MODELS = st.sampled_from([m.name for m in known_models()])
METHODS = st.sampled_from(["full", "lora", "qlora"])
PROFILES = st.sampled_from(["hf", "fused"])


@settings(max_examples=60, deadline=None)
@given(MODELS, METHODS, PROFILES, st.booleans(), st.integers(1, 65536), st.integers(1, 65536))
def test_memory_grows_with_sequence_length(
    model: str, method: str, profile: str, ckpt: bool, s1: int, s2: int
) -> None:
    short, long = sorted((s1, s2))
    w = job(model, method, profile=profile, grad_ckpt=ckpt, seq_len=short)
    assert estimate_memory(w).per_gpu_gib <= estimate_memory(replace(w, seq_len=long)).per_gpu_gib
    if short < long:
        assert (
            estimate_memory(w).per_gpu_gib < estimate_memory(replace(w, seq_len=long)).per_gpu_gib
        )


@settings(max_examples=60, deadline=None)
@given(MODELS, METHODS, st.integers(1, 64), st.integers(1, 64), st.sampled_from(GPU_COUNTS[:6]))
def test_memory_grows_with_micro_batch(model: str, method: str, b1: int, b2: int, n: int) -> None:
    small, large = sorted((b1, b2))
    w = job(model, method, micro_batch=small)
    before, after = estimate_memory(w, n), estimate_memory(replace(w, micro_batch=large), n)
    assert before.per_gpu_gib < after.per_gpu_gib or small == large


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["full", "lora"]), st.floats(0.1, 1000), st.floats(0.1, 1000))
def test_memory_grows_with_parameters(method: str, p1: float, p2: float) -> None:
    small, large = sorted((p1, p2))
    assume(large > small * (1 + 1e-9))  # a last-digit difference is lost in the sums' rounding
    before = estimate_memory(Workload.build(params_b=small, method=method))  # type: ignore[arg-type]
    after = estimate_memory(Workload.build(params_b=large, method=method))  # type: ignore[arg-type]
    assert before.per_gpu_gib < after.per_gpu_gib


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FALLBACK_LAYERS), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_qlora_memory_grows_with_parameters_within_a_size_bucket(
    bucket: tuple[float, int], f1: float, f2: float
) -> None:
    # Across a bucket edge the fallback re-shapes the model (more layers, narrower), which moves
    # parameters from 16-bit embeddings into 4-bit layers; the comparison is only fair within one.
    limit = min(bucket[0], 2000.0)
    low = max([edge for edge, _ in FALLBACK_LAYERS if edge < limit], default=0.0)
    sizes = sorted(low + (limit - low) * f for f in (f1, f2))
    small, large = (max(s, low + 1e-3) for s in sizes)
    before = estimate_memory(Workload.build(params_b=small, method="qlora"))
    after = estimate_memory(Workload.build(params_b=large, method="qlora"))
    assert before.per_gpu_gib <= after.per_gpu_gib


@settings(max_examples=60, deadline=None)
@given(MODELS, st.sampled_from(["lora", "qlora"]), st.integers(1, 1024), st.integers(1, 1024))
def test_memory_grows_with_lora_rank(model: str, method: str, r1: int, r2: int) -> None:
    small, large = sorted((r1, r2))
    w = job(model, method, lora_rank=small)
    before, after = estimate_memory(w), estimate_memory(replace(w, lora_rank=large))
    assert before.per_gpu_gib < after.per_gpu_gib or small == large


@settings(max_examples=60, deadline=None)
@given(
    MODELS,
    st.sampled_from(GPU_COUNTS),
    st.sampled_from(GPU_COUNTS),
    PROFILES,
    st.sampled_from(["adamw", "adamw_8bit"]),
)
def test_more_gpus_never_raise_per_gpu_memory_for_full_fine_tuning(
    model: str, n1: int, n2: int, profile: str, optimizer: str
) -> None:
    few, many = sorted((n1, n2))
    w = job(model, "full", profile=profile, optimizer=optimizer)
    assert estimate_memory(w, many).per_gpu_gib <= estimate_memory(w, few).per_gpu_gib


@settings(max_examples=60, deadline=None)
@given(MODELS, st.integers(128, 32768), st.integers(1, 16), st.sampled_from(GPU_COUNTS[:8]))
def test_qlora_needs_less_than_lora_which_needs_less_than_full(
    model: str, seq_len: int, micro_batch: int, n: int
) -> None:
    def gib(method: str) -> float:
        return estimate_memory(
            job(model, method, seq_len=seq_len, micro_batch=micro_batch), n
        ).per_gpu_gib

    assert gib("qlora") < gib("lora") < gib("full")


# --- ranking ------------------------------------------------------------------------------------


def offer(gpu_id: str | None, count: int, price: float, **extra: Any) -> dict[str, Any]:
    row = {
        "provider": "test",
        "offer_id": f"{gpu_id}-{count}-{price}-{extra.get('pricing', 'on_demand')}",
        "gpu": gpu_id,
        "gpu_raw": gpu_id or extra.pop("gpu_raw", "Mystery GPU"),
        "form_factor": None,
        "gpu_count": count,
        "pricing": "on_demand",
        "price_per_hour": price,
        "price_per_gpu_hour": price / count,
        "available": True,
    }
    return {**row, **extra}


QLORA_70B = job("Llama-3.1-70B", "qlora", tokens="50M")


def test_offers_are_ranked_by_total_cost_not_by_price_per_hour() -> None:
    cheap_slow = offer("A100-80GB", 2, 2.2, form_factor="SXM")
    dear_fast = offer("H100-80GB", 8, 15.47, form_factor="SXM")
    ranking = rank_offers(QLORA_70B, [cheap_slow, dear_fast], CATALOG)
    assert [q.offer["gpu"] for q in ranking.quotes] == ["H100-80GB", "A100-80GB"]
    assert ranking.quotes[0].hours < ranking.quotes[1].hours


def test_cost_is_the_offer_price_times_hours_and_its_range_the_hours_range() -> None:
    (quote,) = rank_offers(
        QLORA_70B, [offer("H100-80GB", 8, 15.47, form_factor="SXM")], CATALOG
    ).quotes
    assert quote.cost_usd == pytest.approx(15.47 * quote.hours)
    low, high = quote.hours_range
    assert quote.cost_range_usd == pytest.approx((15.47 * low, 15.47 * high))
    assert low < quote.hours < high
    assert quote.gpus == 8 and 0 < quote.headroom < 1
    assert (quote.layout, quote.form_factor) == ("ddp", "SXM")


def test_a_single_24_gb_gpu_is_skipped_for_a_70b_qlora_job_with_the_count_it_needs() -> None:
    ranking = rank_offers(
        QLORA_70B, [offer("RTX 4090", 1, 0.3), offer("RTX 4090", 1, 0.4)], CATALOG
    )
    assert ranking.quotes == []
    (group,) = ranking.skipped
    assert (group.gpu, group.offers) == ("RTX 4090", 2)
    assert "needs at least 4 × RTX 4090" in group.reason


def test_equal_costs_rank_the_faster_offer_first_then_the_one_with_more_headroom() -> None:
    w = job("Llama-3.1-8B", "qlora", tokens="50M")
    h100_hours = (
        rank_offers(w, [offer("H100-80GB", 1, 1.0, form_factor="SXM")], CATALOG).quotes[0].hours
    )
    a100_hours = (
        rank_offers(w, [offer("A100-80GB", 1, 1.0, form_factor="SXM")], CATALOG).quotes[0].hours
    )
    # price × hours is then a100_hours × h100_hours for both: exactly the same cost
    a100 = offer("A100-80GB", 1, h100_hours, form_factor="SXM")
    h100 = offer("H100-80GB", 1, a100_hours, form_factor="SXM")
    ranking = rank_offers(w, [a100, h100], CATALOG)
    assert ranking.quotes[0].cost_usd == ranking.quotes[1].cost_usd
    assert [q.offer["gpu"] for q in ranking.quotes] == ["H100-80GB", "A100-80GB"]
    # same GPU speed and price, more memory: the H200 has more headroom
    h100 = offer("H100-80GB", 1, 2.0, form_factor="SXM")
    h200 = offer("H200-141GB", 1, 2.0, form_factor="SXM")
    ranking = rank_offers(w, [h100, h200], CATALOG)
    assert [q.offer["gpu"] for q in ranking.quotes] == ["H200-141GB", "H100-80GB"]


def test_spot_offers_are_left_out_unless_asked_for_and_then_carry_their_risk() -> None:
    offers = [
        offer("H100-80GB", 8, 9.6, pricing="spot", form_factor="SXM"),
        offer("H100-80GB", 8, 15.47, form_factor="SXM"),
    ]
    without = rank_offers(QLORA_70B, offers, CATALOG)
    assert [q.offer["pricing"] for q in without.quotes] == ["on_demand"]
    assert without.quotes[0].interruption_risk is None
    assert "spot" in without.skipped[0].reason
    with_spot = rank_offers(QLORA_70B, offers, CATALOG, include_spot=True)
    assert [q.offer["pricing"] for q in with_spot.quotes] == ["spot", "on_demand"]
    assert with_spot.quotes[0].interruption_risk == SPOT_RISK


def test_bf16_jobs_on_v100_and_t4_offers_are_quoted_in_fp16_and_say_so() -> None:
    w = job("Llama-3.2-3B", "qlora", tokens="10M")
    offers = [offer("T4", 4, 1.0), offer("V100-32GB", 1, 0.5, form_factor="SXM")]
    ranking = rank_offers(w, offers, CATALOG)
    assert ranking.skipped == []
    notes = {q.offer["gpu"]: q.notes for q in ranking.quotes}
    assert "precision fp16 with loss scaling: T4 has no BF16" in notes["T4"]
    assert "precision fp16 with loss scaling: V100-32GB has no BF16" in notes["V100-32GB"]
    assert any("FlashAttention" in note for q in ranking.quotes for note in q.notes)
    fp16 = rank_offers(replace(w, precision="fp16"), offers, CATALOG)
    assert [q.hours for q in fp16.quotes] == [q.hours for q in ranking.quotes]


def test_a_qlora_8b_quote_ranks_rtx_3090_and_4090_offers_before_an_h100() -> None:
    w = job("Llama-3.1-8B", "qlora", tokens="10M")
    offers = [
        offer("RTX 3090", 1, 0.20),
        offer("RTX 4090", 1, 0.35),
        offer("RTX 2080 Ti", 2, 0.24),
        offer("H100-80GB", 1, 2.00, form_factor="SXM"),
    ]
    ranking = rank_offers(w, offers, CATALOG)
    by_gpu = {q.offer["gpu"]: q for q in ranking.quotes}
    assert [q.offer["gpu"] for q in ranking.quotes][:2] == ["RTX 4090", "RTX 3090"]
    assert by_gpu["RTX 4090"].cost_usd < by_gpu["H100-80GB"].cost_usd
    turing = by_gpu["RTX 2080 Ti"]
    assert "precision fp16 with loss scaling: RTX 2080 Ti has no BF16" in turing.notes


def test_unknown_gpus_and_gpus_without_published_tflops_are_skipped_with_reasons() -> None:
    offers = [
        offer(None, 1, 1.0, gpu_raw="RTX 4090D"),
        offer(None, 2, 1.0, gpu_raw="RTX 4090D"),
        offer("RTX PRO 5000", 8, 50.0),
    ]
    ranking = rank_offers(QLORA_70B, offers, CATALOG)
    reasons = {(s.gpu, s.offers): s.reason for s in ranking.skipped}
    assert "not in the catalog" in reasons[("RTX 4090D", 2)]
    assert "no published dense TFLOPs" in reasons[("RTX PRO 5000", 1)]


def test_an_offer_without_form_factor_is_timed_as_the_faster_variant_with_a_range_over_both() -> (
    None
):
    def quoted(form_factor: str | None) -> Any:
        row = offer("H100-80GB", 8, 15.0, form_factor=form_factor)
        return rank_offers(QLORA_70B, [row], CATALOG).quotes[0]

    vague, sxm, pcie = quoted(None), quoted("SXM"), quoted("PCIe")
    assert vague.hours == sxm.hours < pcie.hours
    assert vague.hours_range == (sxm.hours_range[0], pcie.hours_range[1])
    assert vague.form_factor == "SXM" and "faster variant" in vague.notes[0]


def test_max_hours_and_max_cost_leave_out_offers_with_a_reason() -> None:
    offers = [
        offer("A100-80GB", 2, 2.2, form_factor="SXM"),
        offer("H100-80GB", 8, 15.47, form_factor="SXM"),
    ]
    fast = rank_offers(QLORA_70B, offers, CATALOG, max_hours=10)
    assert [q.offer["gpu"] for q in fast.quotes] == ["H100-80GB"]
    assert "max_hours" in fast.skipped[0].reason
    cheap = rank_offers(QLORA_70B, offers, CATALOG, max_cost_usd=50)
    assert [q.offer["gpu"] for q in cheap.quotes] == ["H100-80GB"]


def test_top_returns_the_head_of_the_full_ranking() -> None:
    offers = [offer("A100-80GB", 2, 1.0 + i / 10, form_factor="SXM") for i in range(20)]
    full = rank_offers(QLORA_70B, offers, CATALOG)
    head = rank_offers(QLORA_70B, offers, CATALOG, top=3)
    assert [q.offer["offer_id"] for q in head.quotes] == [
        q.offer["offer_id"] for q in full.quotes[:3]
    ]
    assert head.feasible == full.feasible == 20


def test_ranking_needs_a_token_count() -> None:
    with pytest.raises(WorkloadError, match="tokens"):
        rank_offers(job(), [], CATALOG)


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"tokens": -1}, "tokens"),
        ({"tokens": "-5M"}, "tokens"),
        ({"tokens": "lots"}, "tokens"),
        ({"tokens": 0}, "tokens"),
        ({"lora_rank": 0}, "lora_rank"),
        ({"seq_len": 0}, "seq_len"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"optimizer": "sgd"}, "optimizer"),
        ({"precision": "fp8"}, "precision"),
        ({"profile": "magic"}, "profile"),
        ({"pure_bf16": True, "precision": "fp16"}, "pure_bf16"),
    ],
)
def test_impossible_workloads_raise_an_error_naming_the_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(WorkloadError) as info:
        job(**options)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}:")
    assert isinstance(info.value, PipelineError)


@pytest.mark.parametrize("params_b", [0, -7, math.nan, math.inf])
def test_a_model_size_must_be_positive_and_finite(params_b: float) -> None:
    with pytest.raises(WorkloadError) as info:
        Workload.build(params_b=params_b, method="lora")
    assert info.value.field == "params_b"


def test_an_unknown_model_name_suggests_the_closest_known_ones() -> None:
    with pytest.raises(WorkloadError) as info:
        job("Llama-3.1-7B")
    assert info.value.field == "model"
    assert "Llama-3.1-8B" in info.value.closest
    assert "closest: " in str(info.value)


def test_a_workload_needs_exactly_one_model_source() -> None:
    with pytest.raises(WorkloadError, match="exactly one"):
        Workload.build(model="Llama-3.1-8B", params_b=8, method="lora")
    with pytest.raises(WorkloadError, match="exactly one"):
        Workload.build(method="lora")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"hidden_size": 4096}, "missing"),
        ({**LLAMA_31_8B_CONFIG, "num_local_experts": 8, "num_experts_per_tok": 9}, "more than"),
        ({**LLAMA_31_8B_CONFIG, "num_local_experts": 8, "moe_intermediate_size": 0}, "positive"),
        ({**LLAMA_31_8B_CONFIG, "hidden_size": 0}, "positive integer"),
        ({**LLAMA_31_8B_CONFIG, "num_attention_heads": 30}, "divide"),
    ],
)
def test_an_unusable_config_json_is_rejected_naming_config(
    config: dict[str, Any], message: str
) -> None:
    with pytest.raises(WorkloadError, match=message) as info:
        Workload.build(config=config, method="lora")
    assert info.value.field == "config"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("50M", 50_000_000), ("1.5B", 1_500_000_000), ("200k", 200_000), ("2e8", 200_000_000), (7, 7)],
)
def test_token_counts_accept_suffixes(text: str | int, tokens: int) -> None:
    assert parse_tokens(text) == tokens


def test_memory_on_zero_gpus_is_refused() -> None:
    with pytest.raises(WorkloadError, match="gpus"):
        estimate_memory(job(), 0)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["Llama-3.1-8B", "Llama-3.1-70B"]),
    method=st.sampled_from(["full", "lora", "qlora"]),
    seq_len=st.sampled_from([512, 2048, 8192, 32768]),
    micro_batch=st.sampled_from([1, 4]),
    gpu_id=st.sampled_from(["RTX 4090", "A100-80GB", "H100-80GB", "T4", "L4"]),
)
def test_the_fewest_gpus_found_by_bisection_are_those_a_walk_up_the_counts_finds(
    model, method, seq_len, micro_batch, gpu_id
):
    w = job(model, method, seq_len=seq_len, micro_batch=micro_batch, precision="fp16")
    kind = gpu(gpu_id)
    usable = USABLE_VRAM_FRACTION * kind.vram_gb

    def fits(n: int) -> bool:  # the most sharded layout on n GPUs
        stage = 0 if n == 1 else 3
        memory = estimate_memory(w, n, zero_stage=stage, flash_attention=kind.flash_attention)
        return memory.per_gpu_gib <= usable

    walked = next((n for n in GPU_COUNTS if fits(n)), None)
    assert min_gpus(w, kind).n_gpus == walked
