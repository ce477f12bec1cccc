"""`/offers` writes offers with orjson (current ones once per snapshot): pydantic's bytes."""

from __future__ import annotations

import numpy as np
from pydantic import TypeAdapter

from api.rest.routes.offers import OFFER_JSON, write_offers
from api.rest.schemas import OfferOut
from pipeline.catalog import get_catalog
from pipeline.market.figures import gpu_figures
from tests.pipeline.test_eu_clouds import AT, EUROPEANS, collect
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
    rows = copy.rows_at(np.arange(copy.size), list(OFFER_JSON.columns))
    assert len({row["provider"] for row in rows}) == 8
    assert any(row["fx_date"] for row in rows) and any(row["price_per_pflop_hour"] for row in rows)
    assert OFFER_JSON.encode(rows) == pydantic_json(rows, exclude={"stale"})


def test_offers_as_of_a_time_are_written_as_offer_out_serializes_them(warehouse, tmp_path):
    with stored_market(warehouse, tmp_path).cursor() as cur:
        rows = latest_offers(cur, OfferFilters(as_of=AT, gpu_figures=FIGURES))
    rows = [{**row, "stale": n % 3 == 0} for n, row in enumerate(rows)]
    assert len({row["provider"] for row in rows}) == 8
    assert write_offers(rows) == pydantic_json(rows)
