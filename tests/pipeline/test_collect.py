from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import respx

from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery, current_offers, provider_runs
from scrapers import vastai
from tests.conftest import FIXTURES, OBSERVED_AT


def replay_file(tmp_path: Path, body: bytes, name: str = "body.json") -> Path:
    path = tmp_path / name
    path.write_bytes(body)
    return path


def stored_offer_count(warehouse) -> int:
    with warehouse.cursor() as cur:
        return cur.execute("SELECT count(*) FROM offer_observations").fetchone()[0]


def test_a_replayed_body_is_stored_with_resolved_gpus_at_the_given_time(warehouse):
    [report] = run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        observed_at=OBSERVED_AT,
    )
    assert report.status == "ok" and report.offer_count == 13
    offers = current_offers(warehouse, OfferQuery(gpu="A100-80GB"))
    assert {(o["gpu"], o["form_factor"]) for o in offers} == {("A100-80GB", "SXM")}
    assert all(o["observed_at"] == OBSERVED_AT for o in offers)


def test_one_malformed_offer_is_quarantined_and_the_good_ones_stored(warehouse, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    body["offers"][0]["dph_base"] = "free"
    path = replay_file(tmp_path, orjson.dumps(body))
    [report] = run_collection(["vastai"], warehouse, replays={"vastai": path})
    assert report.status == "ok"
    assert [r.record_id for r in report.rejects] == ["24581137"]
    assert report.offer_count == 11
    with warehouse.cursor() as cur:
        rows = cur.execute("SELECT record_id, reason, raw FROM quarantine").fetchall()
    assert [(r[0]) for r in rows] == ["24581137"]
    assert "free" in rows[0][2]


def test_a_body_that_is_not_json_fails_the_run_cleanly(warehouse, tmp_path):
    path = replay_file(tmp_path, b"<html>502 Bad Gateway</html>")
    [report] = run_collection(["vastai"], warehouse, replays={"vastai": path})
    assert report.status == "failed" and "not JSON" in (report.error or "")
    assert stored_offer_count(warehouse) == 0
    [run] = provider_runs(warehouse)
    assert (run["status"], run["offer_count"]) == ("failed", 0)
    assert "not JSON" in run["error"]


def test_a_failed_run_keeps_the_last_good_snapshot_current(warehouse, tmp_path):
    run_collection(["vastai"], warehouse, replays={"vastai": FIXTURES / "vastai_bundles.json"})
    run_collection(["vastai"], warehouse, replays={"vastai": replay_file(tmp_path, b"{")})
    assert len(current_offers(warehouse, OfferQuery())) == 13


def test_spot_above_on_demand_for_the_same_offer_is_quarantined(warehouse, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    body["offers"][3]["min_bid"] = 99.0
    [report] = run_collection(
        ["vastai"], warehouse, replays={"vastai": replay_file(tmp_path, orjson.dumps(body))}
    )
    assert [r.record_id for r in report.rejects] == ["23977120"]
    assert "above on-demand" in report.rejects[0].reason
    assert {o["pricing"] for o in current_offers(warehouse, OfferQuery(gpu="A100"))} == {
        "on_demand"
    }


@respx.mock(assert_all_mocked=True)
def test_a_provider_that_keeps_failing_is_recorded_and_stores_nothing(
    respx_mock, warehouse, client_factory
):
    respx_mock.post(vastai.URL).mock(return_value=httpx.Response(500))
    [report] = run_collection(["vastai"], warehouse, client_factory=client_factory, env={})
    assert report.status == "failed" and "HTTP 500" in (report.error or "")
    assert stored_offer_count(warehouse) == 0
    assert len(client_factory.waits) == 3  # four attempts


@respx.mock(assert_all_mocked=True)
def test_live_collection_uses_the_real_endpoint(respx_mock, warehouse, client_factory):
    respx_mock.post(vastai.URL).mock(
        return_value=httpx.Response(200, content=(FIXTURES / "vastai_bundles.json").read_bytes())
    )
    [report] = run_collection(["vastai"], warehouse, client_factory=client_factory, env={})
    assert report.status == "ok"
    [run] = provider_runs(warehouse)
    assert run["source"] == vastai.URL
