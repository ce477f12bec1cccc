"""Query strings read without `QueryParams` give what `QueryParams` gives."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

from api.rest.parameters import query_pairs
from api.rest.routes.offers import _OFFERS_QUERY

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


@given(pairs=st.lists(st.tuples(text, text), max_size=6))
def test_an_encoded_query_string_gives_the_pairs_query_params_gives(pairs):
    raw = urlencode(pairs).encode()
    assert query_pairs(raw) == list(QueryParams(raw).multi_items()) == pairs


@given(raw=st.text(alphabet="ab=&%+2C0éF", max_size=24))
def test_any_query_string_reads_as_query_params_reads_it(raw):
    encoded = quote(raw, safe="=&%+").encode()
    assert query_pairs(encoded) == list(QueryParams(encoded).multi_items())


def test_the_offers_model_reads_a_raw_query_as_from_query_params():
    raw = b"gpu=RTX+4090&country=US%2CCA&provider=vastai&provider=runpod&limit=20"
    assert _OFFERS_QUERY.parse_raw(raw, {}) == _OFFERS_QUERY.parse(QueryParams(raw))
    assert _OFFERS_QUERY.parse_raw(b"gpus=H100", {}) is None  # not a name of the model


def test_a_raw_query_takes_the_defaults_only_for_the_names_it_does_not_give():
    assert _OFFERS_QUERY.parse_raw(b"gpu=H100", {"limit": 50}).limit == 50
    assert _OFFERS_QUERY.parse_raw(b"gpu=H100&limit=7", {"limit": 50}).limit == 7
