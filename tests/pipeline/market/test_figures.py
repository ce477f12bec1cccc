from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery, current_offers
from tests.conftest import FIXTURES

AFTER_THE_RATE = datetime(2026, 11, 30, 12, tzinfo=UTC)  # the ECB fixture is of 11-27
NVL72_GPUS = 72
SPARSE_PER_DENSE = 2


@pytest.mark.parametrize(("gpu", "rack_sparse_pflops"), [("GB200", 360), ("GB300", 360)])
def test_nvl72_dense_bf16_is_the_racks_sparse_figure_halved_per_gpu(gpu, rack_sparse_pflops):
    [variant] = [v for v in get_catalog().variants if v.id == gpu]
    dense_tflops = rack_sparse_pflops * 1000 / SPARSE_PER_DENSE / NVL72_GPUS
    assert variant.bf16_tflops_dense == dense_tflops == 2500


def test_every_gb200_gb300_and_b300_offer_carries_a_price_per_pflop_hour(warehouse):
    reports = run_collection(
        ["ecb", "coreweave", "verda", "scaleway"],
        warehouse,
        replays={
            "ecb": FIXTURES / "ecb_eurofxref_daily.xml",
            "coreweave": FIXTURES / "coreweave_pricing_live.html",
            "verda": FIXTURES / "verda_pricing_recorded.html",
            "scaleway": FIXTURES / "scaleway_recorded",
        },
        observed_at=AFTER_THE_RATE,
    )
    assert {r.status for r in reports} == {"ok"}
    for gpu in ("GB200", "GB300", "B300"):
        offers = current_offers(warehouse, OfferQuery(gpu=gpu))
        assert offers, gpu
        for offer in offers:
            pflops = offer["price_per_gpu_hour"] / offer["price_per_pflop_hour"]
            assert pflops == pytest.approx(2.5 if gpu.startswith("GB") else 2.25), offer
