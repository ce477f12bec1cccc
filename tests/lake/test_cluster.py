"""Issue 9's acceptance: two collectors and two API replicas on one lake (PostgreSQL catalog,
local data path), collecting replayed bodies on a short schedule."""

from __future__ import annotations

import shutil
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from pipeline.alerts import AlertKind, AlertSpec, Condition, create_alert
from pipeline.settings import Settings
from scrapers.models import Pricing
from tests.lake.cluster import Node, start_node, wait_until
from tests.lake.test_backend import REPLAYS
from tests.pipeline.alerts_receiver import receiving
from warehouse import Warehouse

LEASE_TTL_S = 3
INTERVAL_S = 2
FIRST = ("vastai", "runpod")
SECOND = ("lambda", "coreweave")


def config(tmp_path: Path) -> Path:
    replay_dir = tmp_path / "replays"
    replay_dir.mkdir()
    for provider, body in REPLAYS.items():
        shutil.copy(body, replay_dir / f"{provider}{body.suffix}")
    intervals = ", ".join(f'{p} = "{INTERVAL_S}s"' for p in REPLAYS)
    path = tmp_path / "gpuprices.toml"
    path.write_text(
        f'replay_dir = "{replay_dir}"\n'
        f'lease_ttl = "{LEASE_TTL_S}s"\n'
        "jitter_s = 0\n"
        "allow_private_webhooks = true\n"
        'webhook_poll = "1s"\n'
        f"intervals = {{ {intervals} }}\n"
    )
    return path


def observation_totals(warehouse: Warehouse) -> tuple[int, int, int]:
    """(observations stored, offers the runs say they stored, runs whose two disagree)."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            WITH per_run AS (
                SELECT r.run_id, r.offer_count, count(o.run_id) AS stored
                FROM collection_runs r LEFT JOIN offer_observations o USING (run_id)
                WHERE r.status = 'ok' GROUP BY ALL
            )
            SELECT sum(stored), sum(offer_count), count(*) FILTER (WHERE stored <> offer_count)
            FROM per_run
            """
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def overlapping_runs(warehouse: Warehouse) -> int:
    """Pairs of runs of one provider that overlapped in time (two collectors at once)."""
    with warehouse.cursor() as cur:
        row = cur.execute(
            """
            SELECT count(*) FROM collection_runs a JOIN collection_runs b
            ON a.provider = b.provider AND a.run_id < b.run_id
            AND a.started_at < b.finished_at AND b.started_at < a.finished_at
            """
        ).fetchone()
    return int(row[0]) if row else 0


def comparable(answer: dict) -> dict:
    """An /offers answer without the parts that depend on when it was asked."""
    for provider in answer.get("providers", []):
        provider.pop("age_seconds", None)
    return answer


def test_two_collectors_and_two_api_replicas_share_one_lake(lake, tmp_path: Path):
    cfg = config(tmp_path)
    env = {
        "GPUPRICES_WAREHOUSE": lake.url,
        "GPUPRICES_LAKE_DATA_PATH": str(lake.data_path),
        "GPUPRICES_CONFIG": str(cfg),
    }
    nodes: list[Node] = []
    with receiving() as receiver:
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
        try:
            first = start_node(
                "collector-1",
                ["--role", "collector", "--providers", ",".join(FIRST)],
                {**env, "GPUPRICES_STANDBY_FOR": ",".join(SECOND)},
                tmp_path,
            )
            second = start_node(
                "collector-2",
                ["--role", "collector", "--providers", ",".join(SECOND)],
                {**env, "GPUPRICES_STANDBY_FOR": ",".join(FIRST)},
                tmp_path,
            )
            apis = [
                start_node(f"api-{n}", ["--role", "api"], env, tmp_path) for n in (1, 2)
            ]
            nodes = [first, second, *apis]
            for node in nodes:
                wait_until(node.healthy, 60, f"{node.name} to answer /healthz")

            # Providers split by configuration: each collected, by its own collector only.
            wait_until(
                lambda: all(first.runs(p) >= 2 for p in FIRST)
                and all(second.runs(p) >= 2 for p in SECOND),
                60,
                "two runs of every provider",
            )
            assert all(second.runs(p) == 0 for p in FIRST)
            assert all(first.runs(p) == 0 for p in SECOND)

            # The first collector dies: the second takes its providers once the lease expires.
            first.stop(signal.SIGKILL)
            took = wait_until(
                lambda: all(second.lines(f"lease collect:{p} taken") for p in FIRST),
                LEASE_TTL_S * 4,
                "the second collector to take over",
            )
            assert took <= LEASE_TTL_S + LEASE_TTL_S / 3 + 2  # expiry + one renewal + slack
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
                ("/offers", {"include_unavailable": "true"}),
                ("/offers", {"as_of": as_of}),
                ("/prices/history", {"gpu": "H100", "since": since, "until": as_of}),
            ]
            for path, params in paths:
                answers = [
                    httpx.get(f"{api.url}{path}", params=params, timeout=30) for api in apis
                ]
                assert [a.status_code for a in answers] == [200, 200], answers[0].text
                one, two = (comparable(a.json()) for a in answers)
                assert one == two
                assert one.get("count", 1) > 0 and one.get("series", [1])
        finally:
            for node in nodes:
                node.stop(signal.SIGKILL)

    # Nothing lost, nothing doubled; never two collectors on one provider at once.
    with Warehouse.open(lake.url, data_path=lake.data_path) as wh:
        stored, claimed, disagreeing = observation_totals(wh)
        assert stored == claimed > 0
        assert disagreeing == 0
        assert overlapping_runs(wh) == 0
        runs_logged = sum(n.runs(p) for n in (first, second) for p in REPLAYS)
        with wh.cursor() as cur:
            row = cur.execute(
                "SELECT count(*) FROM collection_runs WHERE status = 'ok'"
            ).fetchone()
        assert row is not None
        # a run killed between its commit and its log line is stored but not logged
        assert row[0] - runs_logged in (0, 1)


