"""`/offers` writes each current offer once per snapshot with orjson; the bytes are pydantic's."""

from __future__ import annotations

import numpy as np

from api.rest.routes.offers import _OFFER, OFFER_JSON
from pipeline.catalog import get_catalog
from pipeline.market.figures import gpu_figures
from tests.pipeline.test_eu_clouds import EUROPEANS, collect
from tests.search_market import collect_market
from warehouse.current import CurrentOffers


def test_every_offer_is_written_as_offer_out_serializes_it(warehouse, tmp_path):
    collect_market(warehouse, tmp_path)  # the four providers' recorded answers
    collect(warehouse, ["ecb", *EUROPEANS])  # euro prices: currency, rates, dates, fees
    with warehouse.cursor() as cur:
        copy = CurrentOffers.load(cur, gpu_figures=gpu_figures(get_catalog()))
    rows = copy.rows_at(np.arange(copy.size), list(OFFER_JSON.columns))
    assert len({row["provider"] for row in rows}) == 8
    assert any(row["fx_date"] for row in rows) and any(row["price_per_pflop_hour"] for row in rows)
    pydantic = [_OFFER.dump_json(_OFFER.validate_python(row), exclude={"stale"}) for row in rows]
    assert OFFER_JSON.encode(rows) == pydantic
