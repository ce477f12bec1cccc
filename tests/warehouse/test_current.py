"""The one engine of offer questions over recorded offers: every current offer held, cheapest
per GPU-hour first, and a price cap or GPUs ending its candidates as the filters say."""

from __future__ import annotations

from collections.abc import Iterator
from unittest.mock import patch

import pytest

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.market.catalog_figures import gpu_figures
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.warehouse.test_filters import check_answer
from warehouse import OfferFilters, Warehouse
from warehouse.current import CurrentOffers

FIGURES = gpu_figures(get_catalog())

REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles_europe.json",
    "runpod": FIXTURES / "runpod_sweep.json",
    "lambda": FIXTURES / "lambda_instance_types.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warehouse]:
    with Warehouse.open(tmp_path_factory.mktemp("current") / "w.duckdb") as warehouse:
        run_collection(list(REPLAYS), warehouse, replays=REPLAYS, now=lambda: OBSERVED_AT)
        yield warehouse


@pytest.fixture(scope="module")
def copy(stored: Warehouse) -> CurrentOffers:
    with stored.cursor() as cur:
        return CurrentOffers.load(cur, gpu_figures=FIGURES)


def test_the_copy_holds_every_current_offer_cheapest_per_gpu_hour_first(stored, copy):
    with stored.cursor() as cur:
        (count,) = cur.execute("SELECT count(*) FROM current_offers").fetchone()
    everything = copy.rows(OfferFilters(include_unavailable=True))
    assert count > 50 and len(everything) == count == copy.size
    prices = [o["price_per_gpu_hour"] for o in everything]
    assert prices == sorted(prices)
    assert any(o["price_per_pflop_hour"] for o in everything)  # the derived columns


@pytest.mark.parametrize(
    "gpus", [None, frozenset({"RTX 4090"}), frozenset({"A100-80GB", "H100-80GB"})]
)
def test_a_price_cap_over_the_cheapest_first_order_keeps_the_offers_at_or_under_it(copy, gpus):
    prices = sorted({o["price_per_gpu_hour"] for o in copy.rows(OfferFilters())})
    caps = [0.0, prices[0], prices[len(prices) // 2], prices[-1], prices[-1] + 1]
    caps += [(prices[1] + prices[2]) / 2]  # between two prices
    for cap in caps:
        for limit in (None, 1, 5):
            for sort in ("price_per_gpu_hour", "-vram_gb"):
                wanted = OfferFilters(gpus=gpus, max_price_per_gpu_hour=cap, limit=limit, sort=sort)
                check_answer(copy, wanted)


def test_rows_whose_kinds_are_too_varied_to_number_are_compared_whole_with_the_same_answers(
    stored, copy
):
    with stored.cursor() as cur, patch("warehouse.combinations.math.prod", return_value=2**63):
        whole = CurrentOffers.load(cur, gpu_figures=FIGURES)
    for wanted in (
        OfferFilters(gpu_figures=FIGURES),
        OfferFilters(providers=frozenset({"runpod", "lambda"}), pricing="on_demand"),
        OfferFilters(countries=frozenset({"US", "SE"}), include_unavailable=True, limit=4),
        OfferFilters(jurisdiction="eea", nvlink=True, sort="-price_per_hour"),
    ):
        assert whole.rows(wanted) == check_answer(copy, wanted)


def test_sort_orders_and_gpu_sets_kept_stay_within_the_copys_bytes(copy):
    small = CurrentOffers(copy.table, derived_bytes=4096)
    sorts = ("price_per_hour", "-vram_gb", "gpu_count", "-reliability", "ram_gb", "disk_gb")
    families = [frozenset({"RTX 4090", "A100-80GB"}), frozenset({"H100-80GB", "L40S"})]
    for i in range(60):
        wanted = OfferFilters(sort=sorts[i % len(sorts)], gpus=families[i % 2], limit=3)
        assert small.rows(wanted) == copy.rows(wanted)
        assert small.derived_nbytes <= copy.size * 8 + 2 * 4096  # its GPUs' positions, then
