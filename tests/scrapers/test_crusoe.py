"""Crusoe's pricing page (recorded: tests/fixtures/crusoe_pricing.html, its GPU section)."""

from __future__ import annotations

import pytest

from scrapers import Pricing, ProviderPayloadError, crusoe
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("crusoe_pricing.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in crusoe.parse(body, OBSERVED_AT).offers}


def test_the_recorded_page_gives_its_six_on_demand_prices_per_gpu_hour():
    result = crusoe.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    prices = {o.offer_id: o.price_per_gpu_hour for o in result.offers}
    assert prices == {
        "nvidia-h200-hgx": 4.29, "nvidia-h100-hgx": 3.90, "nvidia-a100-sxm": 2.30,
        "nvidia-a100-pcie": 2.00, "nvidia-l40s": 1.50, "amd-mi300x": 3.45,
    }  # fmt: skip
    assert {(o.pricing, o.gpu_count, o.price_quoted_per) for o in result.offers} == {
        (Pricing.ON_DEMAND, 1, "gpu")
    }


def test_contact_sales_rows_give_no_offer_gb200_b200_and_mi355x():
    ids = {oid for oid, _ in offers_by_key()}
    assert not ids & {"nvidia-gb200-nvl72", "nvidia-b200-hgx", "amd-mi355x"}


def test_the_memory_and_form_factor_tags_tell_the_two_a100_rows_apart():
    offers = offers_by_key()
    sxm = offers[("nvidia-a100-sxm", Pricing.ON_DEMAND)]
    pcie = offers[("nvidia-a100-pcie", Pricing.ON_DEMAND)]
    assert (sxm.gpu_raw, sxm.vram_gb) == ("NVIDIA A100 SXM", 80)
    assert (pcie.gpu_raw, pcie.vram_gb) == ("NVIDIA A100 PCIe", 80)
    assert offers[("amd-mi300x", Pricing.ON_DEMAND)].vram_gb == 192


def test_a_spot_price_is_a_spot_offer_apart_from_on_demand():
    priced = BODY.replace(
        b'$3.90/GPU-hr</p></div><div class="pricing-rich w-richtext"><p><a href="/contact-sales">'
        b"Contact sales</a>",
        b'$3.90/GPU-hr</p></div><div class="pricing-rich w-richtext"><p>$1.60/GPU-hr',
    )
    offers = offers_by_key(priced)
    assert offers[("nvidia-h100-hgx", Pricing.SPOT)].price_per_gpu_hour == pytest.approx(1.60)
    assert offers[("nvidia-h100-hgx", Pricing.ON_DEMAND)].price_per_gpu_hour == pytest.approx(3.90)


def test_price_columns_follow_the_header_labels():
    swapped = BODY.replace(b">On-demand<", b">@@<").replace(b">Current spot<", b">On-demand<")
    swapped = swapped.replace(b">@@<", b">Current spot<")
    offers = offers_by_key(swapped)
    assert {pricing for _, pricing in offers} == {Pricing.SPOT}


def test_a_row_with_a_missing_price_cell_is_rejected_and_the_rest_kept():
    body = BODY.replace(b'<div class="pricing-rich w-richtext"><p>$1.50/GPU-hr</p></div>', b"", 1)
    result = crusoe.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "nvidia-l40s"
    assert reject.reason == "row has 2 cells for 3 column labels"
    assert result.offer_count == 5


def test_a_gpu_table_without_price_labels_is_a_changed_layout():
    body = BODY.replace(b">On-demand<", b">Reserved<").replace(b">Current spot<", b">Term<")
    with pytest.raises(ProviderPayloadError, match="no on-demand or spot column"):
        crusoe.parse(body, OBSERVED_AT)
