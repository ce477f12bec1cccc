"""A route's query model is read from Starlette's `QueryParams` in one pydantic call."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from starlette.datastructures import QueryParams

from api.rest.routes.offers import _OFFERS_QUERY


def test_the_offers_model_takes_every_value_of_a_list_and_the_last_of_any_other():
    raw = b"gpu=RTX+4090&country=US%2CCA&provider=vastai&provider=runpod&limit=7&limit=20"
    query = _OFFERS_QUERY.parse(QueryParams(raw))
    assert query.gpu == "RTX 4090" and query.limit == 20
    assert query.providers == ("vastai", "runpod") and query.countries == ("US", "CA")


def test_a_name_the_model_does_not_take_is_refused():
    with pytest.raises(ValidationError, match="gpus"):
        _OFFERS_QUERY.parse(QueryParams(b"gpus=H100"))
