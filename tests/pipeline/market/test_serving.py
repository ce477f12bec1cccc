"""The one place a serving process answers current offers from: `OfferServer`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest.mock import patch

import orjson
import pytest

from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.market.serving import STATUS_TTL_S, OfferServer, answer_offers
from pipeline.market.written import RowEncoder
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.pipeline.collection.test_eu_clouds import collect
from warehouse.current import CurrentOffers

OFFER_JSON_FOR_TESTS = RowEncoder(
    ("provider", "offer_id"), lambda rows: [orjson.dumps(r) for r in rows]
)


def _collect(warehouse, provider, fixture, at):
    run_collection([provider], warehouse, replays={provider: FIXTURES / fixture}, now=lambda: at)


def test_the_server_answers_what_the_warehouse_answers(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    for query in (
        OfferQuery(),
        OfferQuery(gpu="H100", sort="price_per_hour", limit=3),
        OfferQuery(pricing="spot", include_unavailable=True, min_gpu_count=2),
        OfferQuery(region="a"),  # not evaluated in memory: asked of the warehouse
    ):
        assert server.offers(query) == current_offers(warehouse, query)


def test_a_run_written_through_this_process_is_served_at_once(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    before = server.version()
    assert {o["provider"] for o in server.offers(OfferQuery())} == {"vastai"}
    _collect(warehouse, "runpod", "runpod_gpu_types.json", OBSERVED_AT + timedelta(minutes=1))
    assert server.version() != before
    assert {o["provider"] for o in server.offers(OfferQuery())} == {"vastai", "runpod"}


def test_derived_answers_last_as_long_as_the_snapshots(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    made = []
    assert server.derived("k", lambda: made.append(1) or len(made)) == 1
    assert server.derived("k", lambda: made.append(1) or len(made)) == 1
    assert server.peek("k") == 1
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT + timedelta(minutes=1))
    assert server.peek("k") is None
    assert server.derived("k", lambda: made.append(1) or len(made)) == 2


def test_an_encoded_answer_marks_offers_stale_as_answer_offers_does(warehouse):
    collect(warehouse, ["ecb"], ecb=FIXTURES / "ecb_eurofxref_hist_90d.xml")
    collect(warehouse, ["hetzner"], at=datetime(2026, 11, 25, 12, tzinfo=UTC))  # a 9-day-old rate
    collect(warehouse, ["verda"], at=datetime(2026, 11, 25, 12, tzinfo=UTC))  # USD: no rate
    settings = Settings(providers=["hetzner", "verda"], scheduler=False)
    now = datetime(2026, 11, 25, 12, 5, tzinfo=UTC)
    server = OfferServer(warehouse, settings)
    freshness = server.freshness(now)
    expected = answer_offers(warehouse, settings, OfferQuery(), now, freshness).offers
    encoder = RowEncoder(("provider", "offer_id"), lambda rows: [orjson.dumps(r) for r in rows])
    answer = server.encoded(OfferQuery(), freshness, encoder)
    assert answer is not None and answer.count == len(expected)
    got = orjson.loads(answer.array())
    assert [(o["offer_id"], o["stale"]) for o in got] == [
        (o["offer_id"], o["stale"]) for o in expected
    ]
    assert {o["provider"] for o in got if o["stale"]} == {"hetzner"}
    assert {o["provider"] for o in got if not o["stale"]} == {"verda"}
    streamed = [o for piece in answer.pieces() for o in map(orjson.loads, piece)]
    assert streamed == got
    for rows_per_piece in (1, 2, 1000):
        assert b"".join(answer.array_pieces(rows_per_piece)) == answer.array()
    assert answer.array_size() == len(answer.array())


@pytest.mark.parametrize("later, stale", [(timedelta(minutes=1), False), (timedelta(days=9), True)])
def test_an_answer_whose_providers_are_all_fresh_or_all_stale_marks_every_offer_so(
    warehouse, db_path, later, stale
):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, providers=["vastai"]))
    freshness = server.freshness(OBSERVED_AT + later)
    assert [f.stale for f in freshness] == [stale]
    answer = server.encoded(OfferQuery(), freshness, OFFER_JSON_FOR_TESTS)
    assert answer is not None and answer.count > 2 and answer.stale is stale  # no array made
    got = orjson.loads(answer.array())
    assert [o["stale"] for o in got] == [stale] * answer.count
    assert [o for piece in answer.pieces() for o in map(orjson.loads, piece)] == got
    assert b"".join(answer.array_pieces(2)) == answer.array()
    assert answer.array_size() == len(answer.array())
    assert answer.array(b"<", b">") == b"<" + answer.array() + b">"


def test_a_ready_only_answer_reads_and_makes_nothing(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    freshness = server.freshness(OBSERVED_AT)
    encoder = RowEncoder(("provider", "offer_id"), lambda rows: [orjson.dumps(r) for r in rows])
    assert server.encoded(OfferQuery(), freshness, encoder, ready_only=True) is None  # not made
    made = server.encoded(OfferQuery(gpu="H100"), freshness, encoder)
    ready = server.encoded(OfferQuery(gpu="H100"), freshness, encoder, ready_only=True)
    assert made is not None and ready is not None and ready.array() == made.array()
    server._held.read_at -= STATUS_TTL_S  # the runs were read too long ago: a read is due
    with patch("pipeline.market.serving.provider_status", side_effect=AssertionError("read")):
        assert server.encoded(OfferQuery(), freshness, encoder, ready_only=True) is None


def test_a_past_time_is_answered_from_a_copy_of_its_snapshots_as_the_warehouse_answers(
    warehouse, db_path
):
    from api.rest.routes.offers import OFFER_JSON, write_offers

    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT - timedelta(hours=2))
    _collect(warehouse, "runpod", "runpod_gpu_types.json", OBSERVED_AT - timedelta(hours=1))
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)  # after the time asked
    settings = Settings(db=db_path, scheduler=False)
    server = OfferServer(warehouse, settings)
    now = OBSERVED_AT + timedelta(minutes=5)
    at = OBSERVED_AT - timedelta(minutes=30)
    loads = []
    real_load = CurrentOffers.load

    def counted(*args, **kwargs):
        loads.append(kwargs.get("past"))
        return real_load(*args, **kwargs)

    with patch.object(CurrentOffers, "load", side_effect=counted):
        for query in (
            OfferQuery(as_of=at),
            OfferQuery(as_of=at, gpu="H100", sort="-price_per_hour", limit=2),
            OfferQuery(as_of=at, provider="runpod", include_unavailable=True),
            OfferQuery(as_of=at, max_price_per_gpu=1.0, min_gpu_count=2),
        ):
            freshness = server.freshness(now)
            expected = answer_offers(warehouse, settings, query, now, freshness)
            answer = server.encoded(query, freshness, OFFER_JSON, now=now)
            assert answer is not None
            assert answer.array() == b"[" + b",".join(write_offers(expected.offers)) + b"]"
            assert answer.providers == expected.providers
    assert len(loads) == 1  # one copy for that time, made once
    assert {run_id.split("-")[0] for run_id, _ in loads[0][0]} == {"vastai", "runpod"}


def test_a_large_past_snapshot_is_asked_of_the_warehouse(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False))
    query = OfferQuery(as_of=OBSERVED_AT + timedelta(minutes=1))
    now = OBSERVED_AT + timedelta(minutes=5)
    freshness = server.freshness(now)
    assert server.encoded(query, freshness, OFFER_JSON_FOR_TESTS, now=now) is not None
    with patch("pipeline.market.serving.PAST_COPY_ROWS", 12):  # the snapshot holds 13
        assert server.encoded(query, freshness, OFFER_JSON_FOR_TESTS, now=now) is None
    assert server.encoded(query, freshness, OFFER_JSON_FOR_TESTS) is None  # no `now`: not asked


def test_a_past_copy_is_written_anew_for_another_front_end_without_reading_it_again(
    warehouse, db_path
):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False))
    query = OfferQuery(as_of=OBSERVED_AT + timedelta(minutes=1))
    now = OBSERVED_AT + timedelta(minutes=5)
    freshness = server.freshness(now)
    ids = RowEncoder(("offer_id",), lambda rows: [orjson.dumps(r) for r in rows])
    first = server.encoded(query, freshness, OFFER_JSON_FOR_TESTS, now=now)
    with patch.object(CurrentOffers, "load", side_effect=AssertionError("read again")):
        other = server.encoded(query, freshness, ids, now=now)
    assert first is not None and other is not None
    assert [o["offer_id"] for o in orjson.loads(other.array())] == [
        o["offer_id"] for o in orjson.loads(first.array())
    ]
    assert set(orjson.loads(other.array())[0]) == {"offer_id", "stale"}
