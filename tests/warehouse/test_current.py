"""The in-memory copy of current offers answers exactly what `latest_offers` answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.market.catalog_figures import gpu_figures
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.warehouse.test_filters import filters_over
from warehouse import OfferFilters, Warehouse
from warehouse.current import CurrentOffers
from warehouse.offers import latest_offers

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
def rows(stored: Warehouse) -> list[dict]:
    with stored.cursor() as cur:
        return latest_offers(cur, OfferFilters(include_unavailable=True, gpu_figures=FIGURES))


def test_the_copy_holds_every_current_offer_cheapest_per_gpu_hour_first(stored):
    with stored.cursor() as cur:
        copy = CurrentOffers.load(cur, gpu_figures=FIGURES)
        everything = latest_offers(cur, OfferFilters(include_unavailable=True, gpu_figures=FIGURES))
    assert len(everything) > 50
    assert copy.rows(OfferFilters(include_unavailable=True, gpu_figures=FIGURES)) == everything


def test_filters_it_does_not_evaluate_are_left_to_the_query():
    assert not CurrentOffers.answers(OfferFilters(as_of=OBSERVED_AT))


@pytest.fixture(scope="module")
def copy(stored: Warehouse) -> CurrentOffers:
    with stored.cursor() as cur:
        return CurrentOffers.load(cur, gpu_figures=FIGURES)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_filters_and_sort_give_the_rows_latest_offers_gives(stored, copy, rows, data):
    wanted = data.draw(filters_over(rows, FIGURES))
    with stored.cursor() as cur:
        assert copy.rows(wanted) == latest_offers(cur, wanted)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_reading_candidates_a_few_at_a_time_gives_the_same_rows(copy, rows, data):
    wanted = data.draw(filters_over(rows, FIGURES))
    with patch("warehouse.current._FIRST_STEP", 3):  # steps of 3, 6, 12... rows (4 x limit)
        assert copy.rows(wanted) == copy.rows(replace(wanted, limit=None))[: wanted.limit]


@pytest.mark.parametrize(
    "gpus", [None, frozenset({"RTX 4090"}), frozenset({"A100-80GB", "H100-80GB"})]
)
def test_a_price_cap_over_the_cheapest_first_order_gives_the_rows_the_query_gives(
    stored, copy, gpus
):
    with stored.cursor() as cur:
        prices = sorted({o["price_per_gpu_hour"] for o in latest_offers(cur, OfferFilters())})
        caps = [0.0, prices[0], prices[len(prices) // 2], prices[-1], prices[-1] + 1]
        caps += [(prices[1] + prices[2]) / 2]  # between two prices
        for cap in caps:
            for limit in (None, 1, 5):
                wanted = OfferFilters(
                    gpus=gpus, max_price_per_gpu_hour=cap, limit=limit, gpu_figures=FIGURES
                )
                assert copy.rows(wanted) == latest_offers(cur, wanted), (cap, limit)


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
        assert whole.rows(wanted) == copy.rows(wanted)
