"""`/offers` writes offers with orjson (those of a copy once per copy): pydantic's bytes."""

from __future__ import annotations

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from api.rest.offers_json import OFFER_KEYS, _split_array, write_offers
from api.rest.schemas import OfferOut
from pipeline.catalog import get_catalog
from pipeline.market.catalog_figures import gpu_figures
from tests.pipeline.collection.test_eu_clouds import AT, EUROPEANS, collect
from tests.search_market import collect_market
from warehouse.current import CurrentOffers
from warehouse.offers import OfferFilters, latest_offers

OFFER = TypeAdapter(OfferOut)
FIGURES = gpu_figures(get_catalog())


def pydantic_json(rows, **dump):
    return [OFFER.dump_json(OFFER.validate_python(row), **dump) for row in rows]


def stored_market(warehouse, tmp_path):
    collect_market(warehouse, tmp_path)  # the four providers' recorded answers
    collect(warehouse, ["ecb", *EUROPEANS])  # euro prices: currency, rates, dates, fees
    return warehouse


def test_every_current_offer_is_written_as_offer_out_serializes_it(warehouse, tmp_path):
    with stored_market(warehouse, tmp_path).cursor() as cur:
        copy = CurrentOffers.load(cur, gpu_figures=FIGURES)
    rows = copy.rows_at(np.arange(copy.size), list(OFFER_KEYS[:-1]))
    assert len({row["provider"] for row in rows}) == 8
    assert any(row["fx_date"] for row in rows) and any(row["price_per_pflop_hour"] for row in rows)
    assert write_offers(rows, OFFER_KEYS[:-1]) == pydantic_json(rows, exclude={"stale"})


def test_offers_as_of_a_time_are_written_as_offer_out_serializes_them(warehouse, tmp_path):
    with stored_market(warehouse, tmp_path).cursor() as cur:
        rows = latest_offers(cur, OfferFilters(as_of=AT, gpu_figures=FIGURES))
    rows = [{**row, "stale": n % 3 == 0} for n, row in enumerate(rows)]
    assert len({row["provider"] for row in rows}) == 8
    assert write_offers(rows) == pydantic_json(rows)


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries({"run_id": st.text()}, optional={"x": _VALUES, "y": _VALUES}),
        max_size=6,
    )
)
def test_rows_written_in_one_call_are_split_into_each_rows_own_bytes(rows):
    # strings may hold the boundary itself: `},{"run_id":` only ever appears escaped in them
    rows = [{"run_id": row.pop("run_id"), **row, "z": '},{"run_id":"'} for row in rows]
    assert _split_array(orjson.dumps(rows), "run_id") == [orjson.dumps(row) for row in rows]
