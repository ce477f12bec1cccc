"""Issue 18: attempts bounded by a total deadline, leases that outlast them, a pool of senders,
`Retry-After` clamped, every attempt recorded, and prompt stops; receivers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.alerts import (
    WebhookDispatcher,
    WebhookSender,
    alert_deliveries,
    send_test,
)
from pipeline.alerts.delivery import STOPPING
from pipeline.collection.collect import utc_now
from pipeline.settings import Settings
from tests.pipeline.alerts.receiver import Answer, Clock, add_rule, enqueue, receiving
from warehouse import alerts as wa

TIMEOUT_S = 2.0  # a healthy local receiver answers well inside it, even on a loaded machine
SLOW = Answer(200, trickle_s=0.25)
"""Its ~60-byte answer would take 15 s: one byte every 0.25 s, well inside the read timeout."""


@pytest.fixture
def settings(db_path):
    return Settings(
        db=db_path,
        allow_private_webhooks=True,
        webhook_timeout_s=TIMEOUT_S,
        webhook_max_attempts=3,
        webhook_backoff="1s",
        webhook_max_backoff="4s",
    )


def wait_until(condition: Callable[[], bool], within_s: float = 10.0) -> None:
    end = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < end, "condition never held"
        time.sleep(0.02)


def status_of(warehouse, delivery_id: str) -> wa.DeliveryRow:
    with warehouse.cursor() as cur:
        row = wa.get_delivery(cur, delivery_id)
    assert row is not None
    return row


def test_a_trickling_receiver_is_cut_off_at_the_attempt_deadline(warehouse, settings):
    with receiving(default=SLOW) as receiver:
        created = add_rule(warehouse, settings, receiver.url, utc_now())
        delivery_id = enqueue(warehouse, created.rule.rule_id, utc_now())
        [result] = WebhookSender(warehouse, settings).deliver([delivery_id])
        wait_until(lambda: receiver.cut_off == 1)  # it noticed the client hang up mid-answer
    assert result.outcome == "retry" and result.status_code is None
    assert result.error == f"no answer within {TIMEOUT_S:g} s"
    assert result.latency_ms < (TIMEOUT_S + 1) * 1000  # the bound: timeout + 1 s


def test_a_claim_outlasts_its_attempt_so_one_webhook_id_is_never_in_flight_twice(
    warehouse, settings
):
    with receiving(default=SLOW) as receiver:
        created = add_rule(warehouse, settings, receiver.url, utc_now())
        delivery_id = enqueue(warehouse, created.rule.rule_id, utc_now())
        first = WebhookSender(warehouse, settings)
        claimed_at = utc_now()
        sending = threading.Thread(target=first.deliver_due)
        sending.start()
        wait_until(lambda: len(receiver.requests) == 1)
        lease = status_of(warehouse, delivery_id).next_attempt_at
        others = WebhookSender(warehouse, settings)
        while sending.is_alive():  # another sender keeps looking while the attempt runs
            assert others.deliver_due() == [] and others.deliver([delivery_id]) == []
        sending.join()
    assert lease >= claimed_at + timedelta(seconds=TIMEOUT_S)
    assert receiver.ids() == [delivery_id] and receiver.most_in_flight_per_id == 1
    assert status_of(warehouse, delivery_id).attempts == 1


def test_while_one_receiver_hangs_another_alerts_delivery_goes_out_on_another_sender(
    warehouse, db_path
):
    settings = Settings(db=db_path, allow_private_webhooks=True, webhook_timeout_s=10)
    stop = threading.Event()
    dispatcher = WebhookDispatcher(WebhookSender(warehouse, settings, stop=stop), stop)
    with receiving(default=Answer(hang=True)) as hanging, receiving() as healthy:
        slow_rule = add_rule(warehouse, settings, hanging.url, utc_now()).rule.rule_id
        stuck = enqueue(warehouse, slow_rule, utc_now())
        assert dispatcher.poll() == 1
        wait_until(lambda: len(hanging.requests) == 1)
        fast_rule = add_rule(warehouse, settings, healthy.url, utc_now()).rule.rule_id
        sent = enqueue(warehouse, fast_rule, utc_now())
        assert dispatcher.poll() == 1  # the next poll, while the first attempt still hangs
        wait_until(lambda: status_of(warehouse, sent).status == "delivered")
        assert status_of(warehouse, stuck).attempts == 0  # still in flight
        wait_until(lambda: dispatcher.in_flight == 1)  # the healthy sender has finished
        dispatcher.shutdown()
    assert healthy.ids() == [sent]


def test_a_stop_cuts_an_attempt_in_flight_short_and_records_it(warehouse, db_path):
    settings = Settings(db=db_path, allow_private_webhooks=True, webhook_timeout_s=30)
    stop = threading.Event()
    dispatcher = WebhookDispatcher(WebhookSender(warehouse, settings, stop=stop), stop)
    with receiving(default=SLOW) as receiver:
        rule_id = add_rule(warehouse, settings, receiver.url, utc_now()).rule.rule_id
        delivery_id = enqueue(warehouse, rule_id, utc_now())
        dispatcher.poll()
        wait_until(lambda: len(receiver.requests) == 1)
        dispatcher.shutdown(grace_s=5)
        assert dispatcher.in_flight == 0
    [log] = alert_deliveries(warehouse, rule_id)
    [attempt] = log.attempts
    assert (attempt.outcome, attempt.error) == ("retry", STOPPING)
    assert log.delivery.status == "pending" and log.delivery.delivery_id == delivery_id


def test_after_the_grace_an_attempt_left_in_flight_is_not_recorded(warehouse, db_path):
    settings = Settings(db=db_path, allow_private_webhooks=True, webhook_timeout_s=30)
    stop = threading.Event()
    sender = WebhookSender(warehouse, settings, stop=stop)
    with receiving() as receiver:
        rule_id = add_rule(warehouse, settings, receiver.url, utc_now()).rule.rule_id
        enqueue(warehouse, rule_id, utc_now())
        delivery = sender.claim_due()
        assert delivery is not None
        WebhookDispatcher(sender, stop).shutdown(grace_s=0)  # closes the sender's records
        late = sender.attempt(delivery)  # e.g. an attempt that was stuck in a connect
    assert receiver.requests == []
    assert late.outcome == "retry" and late.error == STOPPING
    assert alert_deliveries(warehouse, rule_id)[0].attempts == []  # its lease will run out


HUGE = "99999999999999999999"


def test_a_huge_retry_after_is_clamped_and_still_ends_failed_after_max_attempts(
    warehouse, settings
):
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    with receiving(default=Answer(429, {"retry-after": HUGE})) as receiver:
        rule_id = add_rule(warehouse, settings, receiver.url, clock()).rule.rule_id
        log = send_test(warehouse, settings, rule_id, now=clock)
        sender = WebhookSender(warehouse, settings, now=clock)
        for _ in range(5):  # more rounds than attempts allowed
            clock.advance(settings.webhook_max_backoff)
            sender.deliver_due()
    [log] = alert_deliveries(warehouse, rule_id)
    assert log.delivery.status == "failed" and log.delivery.attempts == 3
    assert [a.status_code for a in log.attempts] == [429, 429, 429]
    assert [a.outcome for a in log.attempts] == ["retry", "retry", "failed"]
    assert "gave up after 3 attempts" in log.delivery.last_error
    assert len(receiver.requests) == 3


@pytest.mark.parametrize(
    "value",
    [HUGE, "1" + "0" * 5000, "-5", "1.5", "\u00b2", "soon",
     "Wed, 21 Oct 99999 07:28:00 GMT", "Mon, 32 Foo 2015 25:61:00 GMT"],
)
def test_any_retry_after_answer_is_recorded_and_waits_at_most_the_longest_backoff(
    warehouse, settings, value
):
    clock = Clock(datetime.now(UTC).replace(microsecond=0))
    with receiving([Answer(503, {"retry-after": value})]) as receiver:
        rule_id = add_rule(warehouse, settings, receiver.url, clock()).rule.rule_id
        [result] = WebhookSender(warehouse, settings, now=clock).deliver(
            [enqueue(warehouse, rule_id, clock())]
        )
    assert result.outcome == "retry" and result.status_code == 503
    assert clock() < result.next_attempt_at <= clock() + settings.webhook_max_backoff
    assert [a.attempt for a in alert_deliveries(warehouse, rule_id)[0].attempts] == [1]
