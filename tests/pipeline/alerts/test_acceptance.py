"""Issue 7's acceptance: replayed collections, a real receiver on 127.0.0.1, the real verifier."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import orjson
import pytest
from standardwebhooks import Webhook

from pipeline.alerts import (
    AlertKind,
    AlertSpec,
    Condition,
    WebhookSender,
    alert_deliveries,
    create_alert,
    evaluate_alerts,
)
from pipeline.collection.collect import run_collection
from pipeline.collection.schedule import Collector, collect_provider
from pipeline.settings import Settings
from scrapers import build_client
from scrapers.models import Pricing
from tests.pipeline.alerts.receiver import Answer, Clock, receiving, vast_bundles

FAST = {
    "allow_private_webhooks": True,
    "webhook_timeout_s": 0.5,
    "webhook_backoff": 1,
    "webhook_max_backoff": 4,
}


@pytest.fixture
def clock():
    return Clock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def settings(db_path):
    return Settings(db=db_path, providers=["vastai"], scheduler=False, **FAST)


def h100_below(url: str, price: float) -> AlertSpec:
    condition = Condition.of(
        kind=AlertKind.PRICE,
        gpu="H100-80GB",
        pricing=Pricing.ON_DEMAND,
        below_price_per_gpu_hour=price,
    )
    return AlertSpec(url=url, condition=condition, band=0.05)


def collect_and_send(warehouse, settings, clock, path) -> list[str]:
    """One replayed collection, its evaluation, and the first attempt of what it fired."""
    clock.advance(timedelta(seconds=20))  # receivers check timestamps: ±5 min
    run_collection(["vastai"], warehouse, replays={"vastai": path}, now=clock)
    fired = evaluate_alerts(warehouse, settings, clock())
    WebhookSender(warehouse, settings, now=clock).deliver(fired)
    return fired


def test_one_signed_delivery_per_drop_under_the_threshold_and_none_while_it_stays_there(
    warehouse, settings, clock, tmp_path
):
    cheap, dear = vast_bundles(tmp_path, 1.40), vast_bundles(tmp_path, 1.60)
    normal = vast_bundles(tmp_path, 1.93)
    with receiving() as receiver:
        created = create_alert(warehouse, h100_below(receiver.url, 1.50), settings, clock())
        collect_and_send(warehouse, settings, clock, normal)
        assert receiver.requests == []
        collect_and_send(warehouse, settings, clock, cheap)
        assert len(receiver.requests) == 1
        collect_and_send(warehouse, settings, clock, cheap)  # identical: no repeat
        collect_and_send(warehouse, settings, clock, vast_bundles(tmp_path, 1.52, "in-band"))
        collect_and_send(warehouse, settings, clock, cheap)  # never left the band: no repeat
        assert len(receiver.requests) == 1
        collect_and_send(warehouse, settings, clock, dear)  # above 1.50 + 0.05: re-armed
        collect_and_send(warehouse, settings, clock, cheap)
        assert len(receiver.requests) == 2

    first, second = receiver.requests
    assert first.headers["webhook-id"] != second.headers["webhook-id"]
    verifier = Webhook(created.secret)
    for request in receiver.requests:
        event = verifier.verify(request.body, request.headers)
        assert event["type"] == "price.below"
        data = event["data"]
        assert data["rule"]["id"] == created.rule.rule_id
        assert data["value"] == pytest.approx(1.40)
        assert data["offer"]["gpu"] == "H100-80GB" and data["offer"]["pricing"] == "on_demand"
        assert data["offer"]["offer_id"] == "24581137"
        assert data["stale"] is False and data["offer"]["stale"] is False
        assert data["observed_at"] == data["offer"]["observed_at"]
    assert orjson.loads(first.body)["data"]["previous_value"] == pytest.approx(1.93)
    assert orjson.loads(second.body)["data"]["previous_value"] == pytest.approx(1.60)
    assert created.secret.startswith("whsec_")
    assert created.secret not in first.body.decode()


def test_a_rule_whose_condition_already_holds_fires_at_its_first_evaluation(
    warehouse, settings, clock, tmp_path
):
    run_collection(
        ["vastai"], warehouse, replays={"vastai": vast_bundles(tmp_path, 1.40)}, now=clock
    )
    with receiving() as receiver:
        create_alert(warehouse, h100_below(receiver.url, 1.50), settings, clock())
        collect_and_send(warehouse, settings, clock, vast_bundles(tmp_path, 1.40))
    assert len(receiver.requests) == 1


def test_a_receiver_that_fails_twice_gets_the_same_webhook_id_three_times(
    warehouse, settings, clock, tmp_path
):
    answers = [Answer(500, body=b"oops"), Answer(503, {"retry-after": "2"}), Answer(200)]
    with receiving(answers) as receiver:
        created = create_alert(warehouse, h100_below(receiver.url, 1.50), settings, clock())
        [delivery_id] = collect_and_send(warehouse, settings, clock, vast_bundles(tmp_path, 1.4))
        sender = WebhookSender(warehouse, settings, now=clock)
        assert sender.deliver_due() == []  # not due yet: the backoff holds it
        clock.advance(timedelta(seconds=30))
        assert [r.outcome for r in sender.deliver_due()] == ["retry"]
        clock.advance(timedelta(seconds=30))
        assert [r.outcome for r in sender.deliver_due()] == ["delivered"]
        clock.advance(timedelta(seconds=30))
        assert sender.deliver_due() == []

    assert receiver.ids() == [delivery_id] * 3
    verifier = Webhook(created.secret)
    bodies = {r.body for r in receiver.requests}
    assert len(bodies) == 1  # the same event every time, each attempt signed afresh
    for request in receiver.requests:
        verifier.verify(request.body, request.headers)
    [log] = alert_deliveries(warehouse, created.rule.rule_id)
    assert log.delivery.delivery_id == delivery_id and log.delivery.status == "delivered"
    assert [(a.attempt, a.status_code, a.outcome) for a in log.attempts] == [
        (1, 500, "retry"),
        (2, 503, "retry"),
        (3, 200, "delivered"),
    ]
    assert log.attempts[0].error == "HTTP 500: oops"
    assert all(a.latency_ms >= 0 for a in log.attempts)


def test_a_receiver_that_never_answers_ends_failed_after_the_last_attempt(
    warehouse, db_path, clock, tmp_path
):
    settings = Settings(db=db_path, scheduler=False, webhook_max_attempts=3, **FAST)
    with receiving(default=Answer(hang=True)) as receiver:
        created = create_alert(warehouse, h100_below(receiver.url, 1.50), settings, clock())
        collect_and_send(warehouse, settings, clock, vast_bundles(tmp_path, 1.4))
        sender = WebhookSender(warehouse, settings, now=clock)
        for _ in range(3):
            clock.advance(timedelta(seconds=30))
            sender.deliver_due()
    [log] = alert_deliveries(warehouse, created.rule.rule_id)
    assert log.delivery.status == "failed" and log.delivery.next_attempt_at is None
    assert [a.outcome for a in log.attempts] == ["retry", "retry", "failed"]
    assert all(a.status_code is None for a in log.attempts)
    assert "no answer within 0.5 s" in log.attempts[0].error
    assert "gave up after 3 attempts" in log.delivery.last_error
    assert len(receiver.requests) == 3


def test_the_scheduled_collection_stores_events_without_sending_them(
    warehouse, settings, clock, tmp_path
):
    client_factory = serving(vast_bundles(tmp_path, 1.4).read_bytes())

    with receiving(default=Answer(hang=True)) as receiver:
        create_alert(warehouse, h100_below(receiver.url, 1.50), settings, clock())
        collect_provider("vastai", warehouse, settings, threading.Event(), client_factory, clock)
        assert receiver.requests == []  # the job only stored the event
    with warehouse.cursor() as cur:
        assert cur.execute("SELECT status FROM alert_deliveries").fetchall() == [("pending",)]


def test_a_hanging_receiver_never_delays_the_collection_schedule(warehouse, db_path, tmp_path):
    """`serve`'s schedule, for real: collections go on while a webhook attempt hangs."""
    client_factory = serving(vast_bundles(tmp_path, 1.4).read_bytes())

    settings = Settings(
        db=db_path,
        providers=["vastai"],
        intervals={"vastai": 0.2},
        jitter_s=0,
        allow_private_webhooks=True,
        webhook_timeout_s=3,
        webhook_poll=0.1,
    )
    with receiving(default=Answer(hang=True)) as receiver:
        create_alert(warehouse, h100_below(receiver.url, 1.50), settings, datetime.now(UTC))
        collector = Collector(warehouse, settings, client_factory=client_factory)
        collector.start()
        try:
            wait_until(lambda: len(receiver.requests) == 1)  # an attempt is hanging now
            runs_then = ok_runs(warehouse)
            wait_until(lambda: ok_runs(warehouse) >= runs_then + 3)
            assert len(receiver.requests) == 1  # still that one attempt
        finally:
            receiver.released.set()
            collector.shutdown()


def serving(body: bytes):
    """A client factory whose provider answers `body` (the schedule's fetch, offline)."""

    def make() -> httpx.Client:
        return build_client(httpx.MockTransport(lambda _req: httpx.Response(200, content=body)))

    return make


def ok_runs(warehouse) -> int:
    with warehouse.cursor() as cur:
        return cur.execute("SELECT count(*) FROM collection_runs WHERE status = 'ok'").fetchone()[0]


def wait_until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
