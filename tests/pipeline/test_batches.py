"""The pipeline hands the scrapers' offer columns to the warehouse as they are: they must agree.

`scrapers` and `warehouse` import nothing of ours, so each declares the schema it owns; this
test is what keeps the two declarations from drifting apart.
"""

from __future__ import annotations

from scrapers.models import OFFER_COLUMNS, Offer
from warehouse import OFFER_SCHEMA


def test_the_scrapers_offer_columns_are_the_warehouse_offer_schema():
    assert OFFER_COLUMNS.equals(OFFER_SCHEMA)


def test_every_offer_field_has_a_column():
    assert list(OFFER_COLUMNS.names) == list(Offer.model_fields)
