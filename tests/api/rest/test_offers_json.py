"""`/offers` writes each offer once per copy with orjson, by position: pydantic's bytes."""

from __future__ import annotations

from datetime import timedelta

from pydantic import TypeAdapter

from api.rest.offers_json import json_array, ndjson_lines, prepare, ready
from api.rest.schemas import OfferOut
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import OfferServer
from pipeline.settings import Settings
from tests.pipeline.collection.test_eu_clouds import AT, EUROPEANS, collect
from tests.search_market import collect_market

OFFERS = TypeAdapter(list[OfferOut])
OFFER = TypeAdapter(OfferOut)


def stored_market(warehouse, tmp_path):
    collect_market(warehouse, tmp_path)  # the four providers' recorded answers
    collect(warehouse, ["ecb", *EUROPEANS])  # euro prices: currency, rates, dates, fees
    return warehouse


def written(answer) -> tuple[bytes, bytes]:
    """The answer as `/offers` writes it: one JSON array, and NDJSON lines."""
    if not ready(answer):
        prepare(answer)
    return b"".join(json_array(answer, 7)), b"".join(ndjson_lines(answer, 7))


def test_every_current_offer_is_written_as_offer_out_serializes_it(warehouse, tmp_path, db_path):
    server = OfferServer(stored_market(warehouse, tmp_path), Settings(db=db_path))
    now = AT + timedelta(minutes=5)
    answer = server.answer(OfferQuery(include_unavailable=True), now, server.freshness(now))
    offers = answer.offers
    assert len({o["provider"] for o in offers}) == 8 and any(o["stale"] for o in offers)
    assert any(o["fx_date"] for o in offers) and any(o["price_per_pflop_hour"] for o in offers)
    array, lines = written(answer)
    models = OFFERS.validate_python(offers)
    assert array == OFFERS.dump_json(models)
    assert lines == b"".join(OFFER.dump_json(m) + b"\n" for m in models)
    page = server.answer(OfferQuery(gpu="H100", limit=3, sort="-vram_gb"), now, [])
    assert ready(page)  # the copy in force is written whole at its first answer
    assert written(page)[0] == OFFERS.dump_json(OFFERS.validate_python(page.offers))


def test_offers_as_of_a_time_are_written_as_offer_out_serializes_them(warehouse, tmp_path, db_path):
    server = OfferServer(stored_market(warehouse, tmp_path), Settings(db=db_path))
    now = AT + timedelta(minutes=5)
    answer = server.answer(OfferQuery(as_of=AT, limit=20), now, [])
    assert answer.past and answer.count == 20 and not ready(answer)
    prepare(answer)  # only the offers asked of a past copy
    assert ready(answer) and not ready(server.answer(OfferQuery(as_of=AT), now, []))
    array, _ = written(answer)
    assert array == OFFERS.dump_json(OFFERS.validate_python(answer.offers))


def test_a_pages_providers_are_written_as_pydantic_writes_them(warehouse, tmp_path, db_path):
    from starlette.datastructures import State

    from api.rest.routes.offers import _providers_json
    from api.rest.schemas import ProviderFreshnessOut

    providers = TypeAdapter(list[ProviderFreshnessOut])
    server = OfferServer(stored_market(warehouse, tmp_path), Settings(db=db_path))
    now, state = AT + timedelta(minutes=5), State()
    freshness = server.freshness(now)
    for query in (OfferQuery(), OfferQuery(providers=("vastai", "scaleway")), OfferQuery(as_of=AT)):
        answer = server.answer(query, now, freshness)
        pydantics = providers.dump_json(
            providers.validate_python(answer.providers, from_attributes=True)
        )
        assert _providers_json(state, freshness, answer.providers) == pydantics, query
    assert state.providers_written[0] is freshness  # written once while that list is in force
