"""AMD offers in quotes: Transformers and PEFT run on ROCm (full and LoRA); QLoRA where
bitsandbytes ships a ROCm build for the card's target (its installation guide: gfx90a, gfx942,
gfx950), skipped with that reason elsewhere; makers other than NVIDIA and AMD are not modelled."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pipeline.catalog import get_catalog
from pipeline.workload import fit
from pipeline.workload.fit import ROCM_ARCH, gpu_type, min_gpus, precision_problem
from pipeline.workload.model import Workload
from pipeline.workload.ranking import rank_offers

CATALOG = get_catalog()
AMD = sorted({v.id for v in CATALOG.variants if v.vendor == "AMD"})


def job(method: str, model: str = "Llama-3.1-8B") -> Workload:
    return Workload.build(model=model, method=method, tokens="50M")  # type: ignore[arg-type]


def offer(gpu_id: str, count: int, price: float) -> dict[str, Any]:
    return {
        "provider": "test", "offer_id": f"{gpu_id}-{count}", "gpu": gpu_id, "gpu_raw": gpu_id,
        "form_factor": None, "gpu_count": count, "pricing": "on_demand",
        "price_per_hour": price, "price_per_gpu_hour": price / count, "available": True,
    }  # fmt: skip


def test_every_amd_gpu_of_the_catalog_has_a_rocm_target():
    assert AMD and {v.family for v in CATALOG.variants if v.vendor == "AMD"} <= set(ROCM_ARCH)


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_amd_offers_are_ranked_beside_nvidia_for_every_method(method):
    offers = [offer(gpu, 8, 20.0) for gpu in AMD] + [offer("H100-80GB", 8, 20.0)]
    ranking = rank_offers(job(method), offers, CATALOG)
    assert {q.offer["gpu"] for q in ranking.quotes} == {*AMD, "H100-80GB"}, ranking.skipped
    assert not ranking.skipped


def test_qlora_on_an_amd_target_bitsandbytes_does_not_build_is_skipped_with_the_reason(
    monkeypatch,
):
    monkeypatch.setattr(fit, "BITSANDBYTES_ROCM_TARGETS", frozenset({"gfx90a", "gfx950"}))
    offers = [offer("MI300X", 8, 20.0), offer("MI250X", 8, 20.0), offer("H100-80GB", 8, 20.0)]
    ranking = rank_offers(job("qlora"), offers, CATALOG)
    assert {q.offer["gpu"] for q in ranking.quotes} == {"MI250X", "H100-80GB"}
    (skipped,) = ranking.skipped
    assert skipped.gpu == "MI300X" and "bitsandbytes" in skipped.reason
    assert "gfx942" in skipped.reason and "method lora" in skipped.reason
    lora = rank_offers(job("lora"), offers, CATALOG)
    assert {q.offer["gpu"] for q in lora.quotes} == {"MI300X", "MI250X", "H100-80GB"}


def test_an_amd_card_of_unknown_target_cannot_run_qlora_and_is_told_to_use_lora():
    unknown = replace(gpu_type(CATALOG.variants_of("MI300X")[0]), id="MI100", family="MI100")
    fitted = min_gpus(job("qlora"), unknown)
    assert fitted.n_gpus is None and "architecture unknown" in (fitted.reason or "")
    assert fitted.suggestions == ("method lora: 1 × MI100",)
    assert min_gpus(job("lora"), unknown).n_gpus == 1


def test_a_maker_without_a_modelled_training_stack_is_refused_by_name():
    other = replace(gpu_type(CATALOG.variants_of("MI300X")[0]), id="Max 1550", vendor="Intel")
    assert "only the CUDA and ROCm" in (precision_problem(job("lora"), other) or "")
    nvidia = gpu_type(CATALOG.variants_of("H100-80GB")[0])
    assert precision_problem(job("qlora"), nvidia) is None
