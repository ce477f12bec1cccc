"""Hyperstack's GPU pricing page (recorded: tests/fixtures/hyperstack_gpu_pricing.html)."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup, Tag

from scrapers import Pricing, ProviderPayloadError, hyperstack
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("hyperstack_gpu_pricing.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in hyperstack.parse(body, OBSERVED_AT).offers}


def test_the_on_demand_and_spot_cards_give_13_and_5_per_gpu_offers_and_reservations_none():
    result = hyperstack.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    pricings = [o.pricing for o in result.offers]
    assert (pricings.count(Pricing.ON_DEMAND), pricings.count(Pricing.SPOT)) == (13, 5)
    assert {(o.gpu_count, o.price_quoted_per) for o in result.offers} == {(1, "gpu")}
    assert not any(o.price_per_gpu_hour == 2.79 for o in result.offers)  # reserved H200
    assert not any("cpu" in o.offer_id for o in result.offers)


def test_prices_with_no_break_spaces_and_the_vram_column_are_read():
    offers = offers_by_key()
    a100 = offers[("nvidia-a100-nvlink", Pricing.ON_DEMAND)]
    assert (a100.price_per_gpu_hour, a100.vram_gb) == (1.40, 80)
    assert offers[("nvidia-b300", Pricing.ON_DEMAND)].vram_gb == 288


def test_short_names_are_the_boards_hyperstack_sells():
    offers = offers_by_key()
    assert offers[("nvidia-a6000", Pricing.ON_DEMAND)].gpu_raw == "NVIDIA RTX A6000"
    assert offers[("nvidia-h100-nvlink", Pricing.ON_DEMAND)].gpu_raw == "NVIDIA H100 PCIe"
    assert offers[("nvidia-h100-sxm", Pricing.ON_DEMAND)].gpu_raw == "NVIDIA H100 SXM"
    assert offers[("nvidia-rtx-pro-6000-se", Pricing.SPOT)].gpu_raw == (
        "NVIDIA RTX PRO 6000 Server Edition"
    )


def test_spot_offers_take_their_vram_from_the_same_boards_on_demand_row():
    offers = offers_by_key()
    assert offers[("nvidia-h100-pcie", Pricing.SPOT)].vram_gb == 80
    assert offers[("nvidia-l40", Pricing.SPOT)].price_per_gpu_hour == pytest.approx(0.80)


def test_columns_follow_their_labels_not_their_positions():
    soup = BeautifulSoup(BODY, "html.parser")
    on_demand = soup.select(".page-price_card")[0]
    groups = [on_demand.select_one(".page-price_card_head"),
              *on_demand.select(".page-price_card_row_item")]  # fmt: skip
    for group in groups:
        cells = [cell for cell in group.children if isinstance(cell, Tag)]
        cells[1].insert_before(cells[4].extract())  # the price column moves second
    moved = str(soup).encode()
    assert moved != BODY
    assert offers_by_key(moved) == offers_by_key()


def test_a_row_with_a_missing_cell_is_rejected_and_the_rest_kept():
    cell = b'<div class="page-price_card_row_item_col page-price_card_row_item_col2">'
    body = BODY.replace(cell + b"<span>$2.00</span></div>", b"", 1)
    result = hyperstack.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "nvidia-h100-pcie/spot"
    assert "cell count" in reject.reason and result.offer_count == 17


def test_a_gpu_card_without_a_price_column_is_a_changed_layout():
    body = BODY.replace(b"<span>Pricing Per Hour</span>", b"<span>Rate</span>", 1)
    with pytest.raises(ProviderPayloadError, match="no GPU model or price column"):
        hyperstack.parse(body, OBSERVED_AT)
