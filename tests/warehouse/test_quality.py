"""Price outliers are flagged in the run's transaction, and an unconfirmed one (low or high)
stays out of the price index while a confirmed one enters it."""

from __future__ import annotations

from datetime import timedelta

from pipeline.collection.collect import run_collection
from tests.conftest import FIXTURES, OBSERVED_AT
from tests.pipeline.alerts.receiver import H100_OFFER_ID, vast_bundles


def collect_lambda(warehouse) -> None:
    """Lambda's H100s: the other providers' offers a Vast.ai price is compared with."""
    replay = {"lambda": FIXTURES / "lambda_instance_types.json"}
    run_collection(["lambda"], warehouse, replays=replay, observed_at=OBSERVED_AT,
                   env={"LAMBDA_API_KEY": "k"})  # fmt: skip


def index_offer_ids(warehouse) -> set[str]:
    with warehouse.cursor() as cur:
        rows = cur.execute(
            "SELECT offer_id FROM index_rollups WHERE provider = 'vastai' AND gpu = 'H100-80GB' "
            "AND pricing = 'on_demand' AND bucket_interval = '1h' "
            "ORDER BY t DESC LIMIT 1"
        ).fetchall()
    return {r[0] for r in rows}


def collect(warehouse, path, hours: int) -> None:
    run_collection(["vastai"], warehouse, replays={"vastai": path},
                   observed_at=OBSERVED_AT + timedelta(hours=hours))  # fmt: skip


def test_a_low_outlier_enters_the_index_only_once_seen_in_two_runs_in_a_row(warehouse, tmp_path):
    collect_lambda(warehouse)
    cheap = vast_bundles(tmp_path, 0.02)
    collect(warehouse, cheap, 0)
    assert str(H100_OFFER_ID) not in index_offer_ids(warehouse)
    collect(warehouse, cheap, 1)
    assert index_offer_ids(warehouse) == {str(H100_OFFER_ID)}
    with warehouse.cursor() as cur:
        flags = cur.execute(
            "SELECT side, suspect FROM price_outliers WHERE offer_id = ? ORDER BY observed_at",
            [str(H100_OFFER_ID)],
        ).fetchall()
    assert flags == [("low", True), ("low", False)]


def test_a_high_outlier_is_held_out_like_a_low_one_until_a_second_run_confirms_it(
    warehouse, tmp_path
):
    collect_lambda(warehouse)
    dear = vast_bundles(tmp_path, 90.0)
    collect(warehouse, dear, 0)
    assert str(H100_OFFER_ID) not in index_offer_ids(warehouse)
    collect(warehouse, dear, 1)
    with warehouse.cursor() as cur:
        flags = cur.execute("SELECT side, suspect FROM price_outliers ORDER BY observed_at")
        assert flags.fetchall() == [("high", True), ("high", False)]
    assert index_offer_ids(warehouse) == {str(H100_OFFER_ID)}
