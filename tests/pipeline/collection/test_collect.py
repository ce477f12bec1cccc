from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
import orjson
import pytest
import respx

from pipeline.collection.collect import run_collection
from pipeline.market.freshness import provider_freshness
from pipeline.market.offers import OfferQuery, current_offers, provider_runs
from pipeline.settings import Settings
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


def test_spot_above_on_demand_is_published_as_the_spot_offer_it_is(warehouse, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    body["offers"][3]["min_bid"] = 99.0
    [report] = run_collection(
        ["vastai"], warehouse, replays={"vastai": replay_file(tmp_path, orjson.dumps(body))}
    )
    assert report.rejects == [] and report.offer_count == 13
    spot = [o for o in current_offers(warehouse, OfferQuery(pricing="spot")) if
            o["offer_id"] == "23977120"]  # fmt: skip
    assert [o["price_per_hour"] for o in spot] == [99.0]


GOOD = {
    "vastai": "vastai_bundles.json",
    "runpod": "runpod_gpu_types.json",
    "lambda": "lambda_instance_types.json",
    "coreweave": "coreweave_pricing.html",
}
EMPTY = {
    "vastai": (b'{"offers": []}', "holds no offers"),
    "runpod": (b'{"data": {"gpuTypes": []}}', "holds no offers"),
    "lambda": (b'{"data": {}}', "holds no offers"),
    "coreweave": (
        (FIXTURES / "coreweave_pricing.html").read_bytes().replace(b"table-row-v2", b"gone"),
        "no GPU rows",
    ),
}


def test_an_answer_where_every_record_is_rejected_is_a_failed_run(warehouse, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    for record in body["offers"]:
        record["dph_base"] = -1
    path = replay_file(tmp_path, orjson.dumps(body))
    [report] = run_collection(["vastai"], warehouse, replays={"vastai": path})
    assert report.status == "failed"
    assert f"all {len(body['offers'])} records rejected" in (report.error or "")
    with warehouse.cursor() as cur:  # the rejects stay visible in the quarantine
        assert cur.execute("SELECT count(*) FROM quarantine").fetchone()[0] == len(body["offers"])


@pytest.mark.parametrize("provider", sorted(EMPTY))
def test_an_empty_answer_fails_the_run_and_the_last_good_snapshot_stays_served_stale(
    warehouse, tmp_path, provider
):
    good = FIXTURES / GOOD[provider]
    later = OBSERVED_AT + timedelta(minutes=10)
    [first] = run_collection([provider], warehouse, replays={provider: good},
                             now=lambda: OBSERVED_AT)  # fmt: skip
    body, error = EMPTY[provider]
    empty = replay_file(tmp_path, body, name=f"empty-{GOOD[provider]}")
    [report] = run_collection([provider], warehouse, replays={provider: empty}, now=lambda: later)
    assert report.status == "failed" and error in (report.error or "")
    query = OfferQuery(providers=(provider,), include_unavailable=True)
    served = current_offers(warehouse, query)
    assert len(served) == first.offer_count > 0
    settings = Settings(providers=[provider])
    [fresh] = [f for f in provider_freshness(warehouse, settings, later) if f.provider == provider]
    assert fresh.stale and fresh.observed_at == OBSERVED_AT and fresh.last_status == "failed"


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


def test_a_quarantined_duplicate_keeps_the_providers_own_record(warehouse, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    twin = dict(body["offers"][0], dph_base=1.0)  # same id, another price
    body["offers"].append(twin)
    path = replay_file(tmp_path, orjson.dumps(body))
    [report] = run_collection(["vastai"], warehouse, replays={"vastai": path})
    assert report.status == "ok"
    with warehouse.cursor() as cur:
        [(record_id, reason, raw)] = cur.execute(
            "SELECT record_id, reason, raw FROM quarantine"
        ).fetchall()
    assert record_id == str(twin["id"]) and reason.startswith("duplicate offer_id")
    assert orjson.loads(raw) == twin  # as served, not our offer
