"""Issues 9, 19 and 36: two collectors and two API replicas on one lake (PostgreSQL catalog; its
data in a local directory, or in a bucket of an S3-compatible server), started at once on an
empty catalog, collecting replayed bodies on a short schedule; one collector killed in the middle
of a commit. What they answer is what the embedded default answers on the same recorded bodies."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.alerts import AlertKind, AlertSpec, Condition, create_alert
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from scrapers.models import Pricing
from tests.lake.checks import assert_consistent, observation_totals
from tests.lake.cluster import (
    REPLAYS,
    Node,
    kill_while_committing,
    start_node,
    wait_until,
    write_config,
)
from tests.pipeline.alerts.receiver import receiving
from warehouse import Warehouse

LEASE_TTL_S = 5
"""Also the standby warm-up: long enough for the slower collector to start (they start together)."""
INTERVAL_S = 2
ALL = {"include_unavailable": "true"}
FIRST = ("vastai", "runpod")
SECOND = ("lambda", "coreweave")


def comparable(answer: dict) -> dict:
    """An /offers answer without the parts that depend on when it was asked."""
    for provider in answer.get("providers", []):
        provider.pop("age_seconds", None)
    return answer


def _alike(apis: list, path: str, params: dict) -> bool:
    """Whether both API replicas give the same answer to `path` (each a 200 with rows)."""
    answers = [httpx.get(f"{api.url}{path}", params=params, timeout=30) for api in apis]
    assert [a.status_code for a in answers] == [200, 200], answers[0].text
    one, two = (comparable(a.json()) for a in answers)
    assert one.get("count", 1) > 0 and one.get("series", [1])
    return one == two


def same_offers(answer: dict) -> list[dict]:
    """An /offers answer's offers without what differs between two collections of the same
    recorded bodies (the run, its time, and so whether it is stale when asked), in one order."""
    offers = [
        {k: v for k, v in offer.items() if k not in ("run_id", "observed_at", "stale")}
        for offer in answer["offers"]
    ]
    return sorted(offers, key=lambda o: (o["provider"], o["offer_id"], o["pricing"], str(o)))


def embedded_offers(tmp_path: Path) -> list[dict]:
    """What the embedded default (one DuckDB file) answers after collecting `REPLAYS`."""
    db = tmp_path / "embedded.duckdb"
    with Warehouse.open(db) as file:
        reports = run_collection(list(REPLAYS), file, replays=REPLAYS, env={})
        assert {r.status for r in reports} == {"ok"}
    with TestClient(create_app(Settings(db=db, scheduler=False))) as client:
        return same_offers(client.get("/offers", params=ALL).json())


@pytest.mark.slow
def test_two_collectors_and_two_api_replicas_started_at_once_on_an_empty_lake(
    each_lake, tmp_path: Path
):
    lake = each_lake
    cfg = write_config(tmp_path, LEASE_TTL_S, INTERVAL_S)

    def env(name: str) -> dict[str, str]:
        return {
            # the node's name on its catalog connections: kill_while_committing finds it
            "GPUPRICES_WAREHOUSE": f"{lake.url} application_name={name}",
            "GPUPRICES_LAKE_DATA_PATH": str(lake.data_path),
            "GPUPRICES_CONFIG": str(cfg),
        }

    nodes: list[Node] = []
    with receiving() as receiver:
        try:
            # All four at once on an empty catalog: they race to create it and to migrate.
            first = start_node(
                "collector-1",
                ["--role", "collector", "--providers", ",".join(FIRST)],
                {**env("collector-1"), "GPUPRICES_STANDBY_FOR": ",".join(SECOND)},
                tmp_path,
            )
            second = start_node(
                "collector-2",
                ["--role", "collector", "--providers", ",".join(SECOND)],
                {**env("collector-2"), "GPUPRICES_STANDBY_FOR": ",".join(FIRST)},
                tmp_path,
            )
            apis = [
                start_node(f"api-{n}", ["--role", "api"], env(f"api-{n}"), tmp_path)
                for n in (1, 2)
            ]
            nodes = [first, second, *apis]
            for node in nodes:
                wait_until(node.healthy, 90, f"{node.name} to answer /healthz")
            with Warehouse.open(lake.url, data_path=lake.data_path) as wh:
                spec = AlertSpec(
                    url=receiver.url,
                    condition=Condition.of(
                        kind=AlertKind.PRICE,
                        gpu="H100-80GB",
                        pricing=Pricing.ON_DEMAND,
                        below_price_per_gpu_hour=1000.0,
                    ),
                )
                create_alert(
                    wh, spec, Settings(allow_private_webhooks=True), datetime.now(UTC)
                )

            # Providers split by configuration: each collected, by its own collector only.
            wait_until(
                lambda: all(first.runs(p) >= 2 for p in FIRST)
                and all(second.runs(p) >= 2 for p in SECOND),
                60,
                "two runs of every provider",
            )
            assert all(second.runs(p) == 0 for p in FIRST)
            assert all(first.runs(p) == 0 for p in SECOND)
            listed = httpx.get(f"{apis[0].url}/offers", params=ALL, timeout=30).json()
            assert {offer["provider"] for offer in listed["offers"]} == set(REPLAYS)
            assert same_offers(listed) == embedded_offers(tmp_path)

            # The first collector dies in the middle of a commit (its Parquet files written, its
            # catalog transaction sent): that run is in the lake whole, or not at all.
            kill_while_committing(first, lake.conninfo, 30)
            with Warehouse.open(lake.url, data_path=lake.data_path) as wh:
                assert_consistent(wh)
            # The second collector takes its providers once their leases expire.
            took = wait_until(
                lambda: all(second.lines(f"lease collect:{p} taken") for p in FIRST),
                LEASE_TTL_S * 4,
                "the second collector to take over",
            )
            assert took <= LEASE_TTL_S + 2  # within one lease time (+ slack for a loaded machine)
            before = {p: second.runs(p) for p in FIRST}
            wait_until(
                lambda: all(second.runs(p) >= before[p] + 2 for p in FIRST),
                30,
                "the second collector to collect the taken-over providers",
            )
            second.stop()  # SIGTERM: a clean shutdown, its leases released

            # One alert crossing, two collectors delivering: exactly one delivery.
            wait_until(lambda: len(receiver.requests) >= 1, 15, "the webhook")
            assert len(receiver.requests) == 1
            assert receiver.requests[0].headers["webhook-id"].startswith("msg_")

            # Both API replicas give the same answers.
            as_of = datetime.now(UTC).isoformat()
            since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
            paths = [
                ("/offers", ALL),
                ("/offers", {"as_of": as_of}),
                ("/prices/history", {"gpu": "H100", "since": since, "until": as_of}),
            ]
            for path, params in paths:
                # A replica reads the runs once a second (STATUS_TTL_S): the last run a collector
                # wrote as it stopped shows on both within that.
                wait_until(lambda p=path, q=params: _alike(apis, p, q), 10, f"{path} alike on both")
        finally:
            for node in nodes:
                node.stop(signal.SIGKILL)

    # Nothing partial, lost or doubled; never two collectors on one provider at once.
    with Warehouse.open(lake.url, data_path=lake.data_path) as wh:
        assert_consistent(wh)
        assert observation_totals(wh)[0] > 0
        runs_logged = sum(n.runs(p) for n in (first, second) for p in REPLAYS)
        with wh.cursor() as cur:
            row = cur.execute(
                "SELECT count(*) FROM collection_runs WHERE status = 'ok'"
            ).fetchone()
        assert row is not None
        # a run killed between its commit and its log line is stored but not logged
        assert row[0] - runs_logged in (0, 1)
