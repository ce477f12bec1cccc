"""Nebius's prices page (recorded: tests/fixtures/nebius_prices.html, its RSC table blocks)."""

from __future__ import annotations

import pytest

from scrapers import Pricing, ProviderPayloadError, nebius
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("nebius_prices.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in nebius.parse(body, OBSERVED_AT).offers}


def test_each_priced_gpu_is_listed_on_demand_and_preemptible_in_every_nebius_region():
    offers = offers_by_key()
    models = {oid.split("@")[0] for oid, _ in offers}
    assert models == {"nvidia-hgx-b300", "nvidia-hgx-b200", "nvidia-hgx-h200",
                      "nvidia-hgx-h100", "nvidia-rtx-pro-6000"}  # fmt: skip
    assert len(offers) == 5 * 2 * len(nebius.REGIONS)
    assert {o.region for o in offers.values()} == set(nebius.REGIONS)
    assert {"eu-north1", "eu-west1", "eu-north2"} <= set(nebius.REGIONS)


def test_prices_are_per_gpu_hour_with_one_gpus_share_of_vcpus_and_ram():
    h100 = offers_by_key()[("nvidia-hgx-h100@eu-north1", Pricing.ON_DEMAND)]
    assert (h100.gpu_count, h100.price_quoted_per, h100.price_per_gpu_hour) == (1, "gpu", 3.85)
    assert (h100.vcpus, h100.ram_gb, h100.vram_gb) == (16, 200, 80)


def test_the_preemptible_column_is_spot():
    offer = offers_by_key()[("nvidia-hgx-b300@us-central1", Pricing.SPOT)]
    assert offer.price_per_gpu_hour == pytest.approx(4.30)


def test_contact_us_and_dashes_give_no_offer_and_no_reject():
    result = nebius.parse(BODY, OBSERVED_AT)
    assert not any("nvl72" in o.offer_id for o in result.offers)
    assert {r.record_id for r in result.rejects} == {"nvidia-l40s-with-intel-cpu",
                                                     "nvidia-l40s-with-amd-cpu"}  # fmt: skip


def test_a_from_price_over_a_range_of_presets_is_a_reject_with_its_reason():
    [intel, _] = nebius.parse(BODY, OBSERVED_AT).rejects
    assert "'from $0.90' is the lowest of a range of configurations" in intel.reason
    assert '"16-192"' in intel.raw


def test_columns_are_found_by_their_labels_not_their_positions():
    swapped = BODY.replace(b'\\"Preemptible, GPU-hour\\",\\"On-demand, GPU-hour\\"',
                           b'\\"On-demand, GPU-hour\\",\\"Preemptible, GPU-hour\\"')  # fmt: skip
    h100 = offers_by_key(swapped)[("nvidia-hgx-h100@eu-north1", Pricing.ON_DEMAND)]
    assert h100.price_per_gpu_hour == pytest.approx(2.15)  # the cells did not move


def test_a_price_column_that_is_not_per_gpu_hour_is_a_changed_page():
    body = BODY.replace(b"On-demand, GPU-hour", b"On-demand, per hour")
    with pytest.raises(ProviderPayloadError, match="not per GPU-hour"):
        nebius.parse(body, OBSERVED_AT)


def test_a_page_chunk_split_across_two_pushes_is_joined_before_reading():
    head, tail = BODY.split(b'\\"title\\":\\"NVIDIA GPU Instances', 1)
    push = b'"])</script><script>self.__next_f.push([1,"'
    split = head + push + b'\\"title\\":\\"NVIDIA GPU Instances' + tail
    assert offers_by_key(split) == offers_by_key()


def test_blocks_moved_out_of_the_pushed_payload_are_still_found():
    start, end = BODY.index(b"self.__next_f.push([1,"), BODY.index(b'"])</script>')
    excerpt = BODY[start + len(b"self.__next_f.push([1,") + 1 : end]  # the recorded excerpt
    page = b"<html><body><script>window.__DATA__ = '" + excerpt + b"';</script></body></html>"
    assert offers_by_key(page) == offers_by_key()


def test_a_page_without_the_table_blocks_is_a_payload_error():
    body = BODY.replace(b"highlight-table-block", b"rich-text-block")
    with pytest.raises(ProviderPayloadError, match="no GPU price table block"):
        nebius.parse(body, OBSERVED_AT)
