"""Answers published by the providers themselves (tests/fixtures/README.md names each source)."""

from __future__ import annotations

import pytest

from pipeline.collection.collect import run_collection
from scrapers import FormFactor, Pricing, lambdalabs, runpod, vastai
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes


def test_vastais_documented_search_answer_gives_its_on_demand_and_spot_offers():
    result = vastai.parse(fixture_bytes("vastai_docs_example.json"), OBSERVED_AT)
    offers = {o.pricing: o for o in result.offers}
    assert result.rejects == [] and set(offers) == {Pricing.ON_DEMAND, Pricing.SPOT}
    on_demand = offers[Pricing.ON_DEMAND]
    assert (on_demand.offer_id, on_demand.gpu_count) == ("12345678", 4)
    assert on_demand.price_per_hour == pytest.approx(0.123456)
    assert offers[Pricing.SPOT].price_per_hour == pytest.approx(0.111111)
    assert on_demand.vram_gb == 24  # gpu_ram 24576 MiB
    assert on_demand.ram_gb == 64  # cpu_ram 65536 MiB, the offer's own share
    assert on_demand.vcpus == 32 and on_demand.reliability == pytest.approx(0.9999)


def test_runpods_documented_gpu_record_gives_both_clouds_unlocated():
    result = runpod.parse(fixture_bytes("runpod_docs_get_gpu.json"), OBSERVED_AT)
    offers = {(o.tier, o.pricing): o for o in result.offers}
    assert result.rejects == []
    assert offers[("secure", Pricing.ON_DEMAND)].price_per_gpu_hour == pytest.approx(1.89)
    assert offers[("community", Pricing.ON_DEMAND)].price_per_gpu_hour == pytest.approx(1.59)
    assert offers[("community", Pricing.SPOT)].price_per_gpu_hour == pytest.approx(0.89)
    assert {o.region for o in result.offers} == {None}
    assert not any(o.available for o in result.offers)  # the record carries no stockStatus


def test_runpods_documented_gpu_list_without_prices_is_a_failed_run_with_its_rejects(warehouse):
    replay = FIXTURES / "runpod_docs_get_gpus.json"
    [report] = run_collection(["runpod"], warehouse, replays={"runpod": replay})
    assert report.status == "failed" and "all 2 records rejected" in (report.error or "")
    assert {r.reason for r in report.rejects} == {"missing field 'securePrice / communityPrice'"}


def test_lambdas_spec_examples_give_a_located_offer_and_a_sold_out_one():
    result = lambdalabs.parse(fixture_bytes("lambda_spec_examples.json"), OBSERVED_AT)
    offers = {o.offer_id: o for o in result.offers}
    assert result.rejects == [] and set(offers) == {"gpu_8x_h100_sxm5gdr@us-west-1",
                                                    "gpu_8x_example"}  # fmt: skip
    h100 = offers["gpu_8x_h100_sxm5gdr@us-west-1"]
    assert (h100.gpu_raw, h100.form_factor, h100.vram_gb) == (
        "H100 (80 GB SXM5)",
        FormFactor.SXM,
        80,
    )
    assert h100.price_per_hour == pytest.approx(35.92)
    assert h100.price_per_gpu_hour == pytest.approx(4.49)
    sold_out = offers["gpu_8x_example"]
    assert not sold_out.available and sold_out.region is None
