"""An aggregator's resale of a cloud we collect directly is counted once: the price index takes
that cloud's own offers, not the resale (`warehouse.summaries.COUNTED_ONCE`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline.collection.collect import run_collection
from tests.conftest import FIXTURES
from warehouse.index import contributions

T = datetime(2026, 3, 1, 10, 5, tzinfo=UTC)
PRIME = FIXTURES / "primeintellect_availability_gpus.json"
LAMBDA = FIXTURES / "lambda_instance_types.json"
LAMBDA_RESALE = "lambdalabs:gpu_8x_h100_sxm5:secure_cloud@united_states"  # 2.49 per GPU-hour
VERDA_RESALE = "datacrunch:1H100.80S.30V:secure_cloud@FIN-01"  # 2.59, Verda not collected here


def collect(warehouse, name, path, at):
    [report] = run_collection([name], warehouse, replays={name: path}, now=lambda: at)
    assert report.status == "ok", report.error


def h100_sxm(warehouse, bucket: datetime) -> dict[str, tuple[float, str]]:
    """Each provider's index figure for the SXM H100, on demand, in the hour of `bucket`."""
    with warehouse.cursor() as cur:
        rows = contributions(cur, frozenset({"H100-80GB"}), "on_demand", "1h", bucket, "SXM")
    return {r["provider"]: (r["value"], r["offer_id"]) for r in rows}


def test_a_resale_counts_while_its_seller_is_not_collected_directly(warehouse):
    collect(warehouse, "primeintellect", PRIME, T)
    assert h100_sxm(warehouse, T.replace(minute=0))["primeintellect"] == (2.49, LAMBDA_RESALE)


def test_once_the_seller_is_collected_its_resale_leaves_the_index_and_its_own_offer_counts(
    warehouse,
):
    collect(warehouse, "lambda", LAMBDA, T)
    collect(warehouse, "primeintellect", PRIME, T + timedelta(minutes=1))
    figures = h100_sxm(warehouse, T.replace(minute=0))
    assert figures["primeintellect"] == (2.59, VERDA_RESALE)
    assert figures["lambda"][1].startswith("gpu_8x_h100_sxm5")
    with warehouse.cursor() as cur:
        listed = cur.execute(
            "SELECT seller FROM current_offers WHERE offer_id = ?", [LAMBDA_RESALE]
        ).fetchall()
    assert listed == [("lambda",)]  # still listed, with its seller: only not counted twice
