from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pipeline.collection.collect import run_collection
from pipeline.market.freshness import provider_freshness
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT

SETTINGS = Settings(providers=["vastai", "runpod"])
VAST = {"vastai": FIXTURES / "vastai_bundles.json"}


def freshness_of(warehouse, provider, now):
    return next(f for f in provider_freshness(warehouse, SETTINGS, now) if f.provider == provider)


def test_a_provider_never_collected_is_stale_with_nothing_observed(warehouse):
    fresh = freshness_of(warehouse, "runpod", OBSERVED_AT)
    assert fresh.stale and fresh.observed_at is None and fresh.offer_count == 0


def test_staleness_flips_after_three_intervals_and_back_after_a_good_run(warehouse):
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: OBSERVED_AT)
    threshold = SETTINGS.stale_threshold("vastai")
    assert threshold == timedelta(minutes=30)
    assert not freshness_of(warehouse, "vastai", OBSERVED_AT + threshold).stale
    later = OBSERVED_AT + threshold + timedelta(seconds=1)
    assert freshness_of(warehouse, "vastai", later).stale
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: later)
    fresh = freshness_of(warehouse, "vastai", later)
    assert not fresh.stale and fresh.observed_at == later


def test_a_failed_run_keeps_the_last_snapshot_but_marks_it_stale(warehouse, tmp_path: Path):
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: OBSERVED_AT)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    after = OBSERVED_AT + timedelta(minutes=10)
    run_collection(["vastai"], warehouse, replays={"vastai": bad}, now=lambda: after)
    fresh = freshness_of(warehouse, "vastai", after)
    assert fresh.stale
    assert fresh.observed_at == OBSERVED_AT and fresh.offer_count == 13
    assert fresh.last_status == "failed" and "not JSON" in (fresh.last_error or "")


def test_pruning_drops_old_raw_observations_but_history_keeps_them(warehouse):
    from pipeline.market.history import HistoryQuery, price_history, prune

    old = OBSERVED_AT - timedelta(days=120)
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: old)
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: OBSERVED_AT)
    deleted = prune(warehouse, OBSERVED_AT, timedelta(days=90))
    assert deleted["offer_observations"] == 13
    with warehouse.cursor() as cur:
        assert cur.execute("SELECT min(observed_at) FROM offer_observations").fetchone()[0] == (
            OBSERVED_AT
        )
    query = HistoryQuery(gpu="A100-80GB", interval="1d", since=old - timedelta(days=1))
    series = price_history(warehouse, query, OBSERVED_AT)["series"]
    assert {len(s["points"]) for s in series} == {2}  # the pruned day is still in history


def test_pruning_keeps_a_newest_snapshot_whose_every_offer_is_a_suspect_outlier(warehouse):
    from pipeline.market.history import prune

    old = OBSERVED_AT - timedelta(days=120)
    [report] = run_collection(["vastai"], warehouse, replays=VAST, now=lambda: old)
    with warehouse.transaction() as conn:  # every offer of the snapshot held out as a suspect
        conn.execute(
            "INSERT INTO price_outliers SELECT run_id, provider, offer_id, pricing, "
            "coalesce(gpu, gpu_raw), price_per_gpu_hour, price_per_gpu_hour, 'low', true, "
            "observed_at FROM offer_observations WHERE run_id = ?",
            [report.run_id],
        )
    deleted = prune(warehouse, OBSERVED_AT, timedelta(days=90))
    assert deleted["offer_observations"] == 0
    with warehouse.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM offer_observations").fetchone()[0] == 13


def test_pruning_keeps_a_providers_newest_snapshot_however_old(warehouse):
    from pipeline.market.history import prune
    from pipeline.market.offers import OfferQuery, current_offers

    old = OBSERVED_AT - timedelta(days=120)
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: old - timedelta(days=1))
    run_collection(["vastai"], warehouse, replays=VAST, now=lambda: old)
    deleted = prune(warehouse, OBSERVED_AT, timedelta(days=90))
    assert deleted["offer_observations"] == 13  # the older snapshot only
    offers = current_offers(warehouse, OfferQuery(include_unavailable=True))
    assert len(offers) == 13 and {o["observed_at"] for o in offers} == {old}
