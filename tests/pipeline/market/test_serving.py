"""The one answer of offer questions, current or past: `OfferServer`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest.mock import patch

import pytest

from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery
from pipeline.market.serving import STATUS_TTL_S, OfferServer
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.pipeline.collection.test_eu_clouds import collect
from warehouse.current import CurrentOffers


def _collect(warehouse, provider, fixture, at):
    run_collection([provider], warehouse, replays={provider: FIXTURES / fixture}, now=lambda: at)


def test_the_server_answers_the_offers_a_question_selects_in_its_order(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    everything = server.offers(OfferQuery(include_unavailable=True))
    assert len(everything) == 13
    h100 = server.offers(OfferQuery(gpu="H100", sort="price_per_hour", limit=3))
    assert 0 < len(h100) <= 3 and {o["gpu"] for o in h100} <= {"H100-80GB", "H100-94GB"}
    prices = [o["price_per_hour"] for o in h100]
    assert prices == sorted(prices)
    spot = server.offers(OfferQuery(pricing="spot", include_unavailable=True, min_gpu_count=2))
    assert spot == [
        o for o in everything if o["pricing"] == "spot" and o["gpu_count"] >= 2
    ]  # the loaded order is the default one: cheapest per GPU-hour first


def test_a_run_written_through_this_process_is_served_at_once(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    before = server.version()
    assert {o["provider"] for o in server.offers(OfferQuery())} == {"vastai"}
    _collect(warehouse, "runpod", "runpod_gpu_types.json", OBSERVED_AT + timedelta(minutes=1))
    assert server.version() != before
    assert {o["provider"] for o in server.offers(OfferQuery())} == {"vastai", "runpod"}


def test_an_answer_marks_offers_stale_by_provider_and_by_an_old_rate(warehouse):
    collect(warehouse, ["ecb"], ecb=FIXTURES / "ecb_eurofxref_hist_90d.xml")
    collect(warehouse, ["hetzner"], at=datetime(2026, 11, 25, 12, tzinfo=UTC))  # a 9-day-old rate
    collect(warehouse, ["verda"], at=datetime(2026, 11, 25, 12, tzinfo=UTC))  # USD: no rate
    settings = Settings(providers=["hetzner", "verda"], scheduler=False)
    now = datetime(2026, 11, 25, 12, 5, tzinfo=UTC)
    server = OfferServer(warehouse, settings)
    freshness = server.freshness(now)
    answer = server.answer(OfferQuery(), now, freshness)
    assert answer is not None
    expected = answer.offers
    assert {o["provider"] for o in expected if o["stale"]} == {"hetzner"}
    assert {o["provider"] for o in expected if not o["stale"]} == {"verda"}


@pytest.mark.parametrize("later, stale", [(timedelta(minutes=1), False), (timedelta(days=9), True)])
def test_an_answer_whose_providers_are_all_fresh_or_all_stale_marks_every_offer_so(
    warehouse, db_path, later, stale
):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, providers=["vastai"]))
    freshness = server.freshness(OBSERVED_AT + later)
    assert [f.stale for f in freshness] == [stale]
    answer = server.answer(OfferQuery(), OBSERVED_AT + later, freshness)
    assert answer is not None and answer.count > 2
    assert answer.stale.tolist() == [stale] * answer.count


def test_a_ready_only_answer_reads_and_makes_nothing(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path))
    freshness = server.freshness(OBSERVED_AT)
    query = OfferQuery(gpu="H100")
    assert server.answer(query, OBSERVED_AT, freshness, ready_only=True) is None  # no copy yet
    made = server.answer(query, OBSERVED_AT, freshness)
    ready = server.answer(query, OBSERVED_AT, freshness, ready_only=True)
    assert made is not None and ready is not None and ready.offers == made.offers
    past = OfferQuery(as_of=OBSERVED_AT)
    assert server.answer(past, OBSERVED_AT, freshness, ready_only=True) is None  # reads runs
    server._held.read_at -= STATUS_TTL_S  # the runs were read too long ago: a read is due
    with patch("pipeline.market.serving.provider_status", side_effect=AssertionError("read")):
        assert server.answer(query, OBSERVED_AT, freshness, ready_only=True) is None


def test_a_past_time_is_answered_from_a_copy_of_each_providers_snapshot_then(warehouse, db_path):
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
        loads.append(args[3] if len(args) > 3 else kwargs.get("past"))
        return real_load(*args, **kwargs)

    with patch.object(CurrentOffers, "load", side_effect=counted):
        every = server.answer(OfferQuery(as_of=at, include_unavailable=True), now, [])
        assert every is not None and every.past and every.count > 13
        observed = {(o["provider"], o["observed_at"]) for o in every.offers}
        assert observed == {
            ("vastai", OBSERVED_AT - timedelta(hours=2)),
            ("runpod", OBSERVED_AT - timedelta(hours=1)),
        }
        assert [(f.provider, f.observed_at) for f in every.providers] == sorted(observed)
        assert [f.age_seconds for f in every.providers] == [30 * 60, 90 * 60]  # runpod, vastai
        assert [f.stale for f in every.providers] == [
            f.age_seconds > f.stale_after_seconds for f in every.providers
        ]
        two = server.answer(
            OfferQuery(as_of=at, gpu="H100", sort="-price_per_hour", limit=2), now, []
        )
        prices = [o["price_per_hour"] for o in two.offers]
        assert len(prices) == 2 and prices == sorted(prices, reverse=True)
        runpod = server.answer(OfferQuery(as_of=at, provider="runpod"), now, [])
        assert runpod.count and {o["provider"] for o in runpod.offers} == {"runpod"}
        assert [f.provider for f in runpod.providers] == ["runpod"]
    assert len(loads) == 1  # one copy for that time, made once
    assert {run_id.split("-")[0] for run_id, _ in loads[0][0]} == {"vastai", "runpod"}


def test_a_past_copy_too_large_to_keep_is_answered_and_dropped(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False))
    server.past_bytes_kept = 1024  # less than any copy
    query = OfferQuery(as_of=OBSERVED_AT + timedelta(minutes=1), include_unavailable=True)
    now = OBSERVED_AT + timedelta(minutes=5)
    answer = server.answer(query, now, server.freshness(now))
    assert answer is not None and answer.count == 13
    assert not server._past  # answered, not kept


def test_past_copies_are_kept_within_their_bytes(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT + timedelta(minutes=2))
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False))
    now = OBSERVED_AT + timedelta(minutes=5)
    freshness = server.freshness(now)
    first = OfferQuery(as_of=OBSERVED_AT + timedelta(minutes=1))
    second = OfferQuery(as_of=OBSERVED_AT + timedelta(minutes=3))
    size = server.answer(first, now, freshness).copy.nbytes
    server.past_bytes_kept = size + size // 2  # room for one copy
    server.answer(second, now, freshness)
    assert len(server._past) == 1
    assert server.kept_bytes <= server.past_bytes_kept  # no copy in force was made


def test_one_off_questions_of_region_and_price_caps_read_nothing_more_from_the_warehouse(
    warehouse, db_path
):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False, memory_budget_mb=256))
    now = OBSERVED_AT + timedelta(minutes=5)
    freshness = server.freshness(now)
    server.answer(OfferQuery(), now, freshness)  # the copy in force
    with patch.object(CurrentOffers, "load", wraps=CurrentOffers.load) as warehouse_reads:
        for i in range(1000):
            query = OfferQuery(
                region=f"e{i % 300}", include_unavailable=True, max_price_per_gpu_hour=1 + i / 100
            )
            server.answer(query, now, freshness)
    assert warehouse_reads.call_count == 0
    assert not server._past
    copy = server._held.copy
    assert copy.derived_nbytes <= server.derived_bytes_kept
    assert server.kept_bytes <= server.settings.memory_budget_mb * 1024 * 1024


def test_each_copy_keeps_its_derived_answers_within_its_bytes(warehouse, db_path):
    _collect(warehouse, "vastai", "vastai_bundles.json", OBSERVED_AT)
    server = OfferServer(warehouse, Settings(db=db_path, scheduler=False))
    server.derived_bytes_kept = 4096  # a few questions' worth
    now = OBSERVED_AT + timedelta(minutes=5)
    freshness = server.freshness(now)
    sorts = ("price_per_hour", "-vram_gb", "gpu_count", "-reliability", "ram_gb", "disk_gb")
    for i in range(200):
        query = OfferQuery(region=f"r{i}", sort=sorts[i % len(sorts)], gpu="H100")
        server.answer(query, now, freshness)
        assert server._held.copy.derived_nbytes <= 2 * server.derived_bytes_kept
