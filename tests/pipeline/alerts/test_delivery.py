"""The outbox sender against a real receiver on 127.0.0.1: answers, retries, leases, restarts."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from standardwebhooks import Webhook

from pipeline.alerts import (
    WebhookSender,
    alert_deliveries,
    get_alert,
    retry_delay,
    send_test,
)
from pipeline.settings import Settings
from tests.pipeline.alerts.receiver import Answer, Clock, add_rule, enqueue, receiving
from warehouse import Warehouse
from warehouse import alerts as wa


@pytest.fixture
def clock():
    return Clock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def settings(db_path):
    return Settings(
        db=db_path, allow_private_webhooks=True, webhook_timeout_s=0.5, webhook_max_attempts=4
    )


def test_backoff_doubles_from_the_base_with_jitter_and_stops_at_the_cap():
    settings = Settings(webhook_backoff="30s", webhook_max_backoff="5m")
    low, high = (lambda: 0.0), (lambda: 1.0)
    assert [retry_delay(n, settings, high, None).total_seconds() for n in (1, 2, 3, 4, 5)] == [
        30, 60, 120, 240, 300,
    ]
    assert retry_delay(1, settings, low, None) == timedelta(seconds=15)  # equal jitter: half
    assert retry_delay(1, settings, low, timedelta(minutes=4)) == timedelta(minutes=4)
    # Retry-After is honoured only up to the longest backoff
    assert retry_delay(1, settings, high, timedelta(minutes=10)) == timedelta(minutes=5)
    assert retry_delay(1, settings, high, timedelta(days=9)) == timedelta(minutes=5)


def test_retry_after_as_an_http_date_is_honoured(warehouse, settings, clock):
    later = clock() + timedelta(minutes=7)
    answer = Answer(429, {"retry-after": format_datetime(later, usegmt=True)})
    with receiving([answer]) as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        delivery_id = enqueue(warehouse, created.rule.rule_id, clock())
        [result] = WebhookSender(warehouse, settings, now=clock).deliver([delivery_id])
    assert result.outcome == "retry" and result.status_code == 429
    assert result.next_attempt_at >= later


def test_410_gone_fails_the_delivery_disables_the_rule_and_cancels_its_other_events(
    warehouse, settings, clock
):
    with receiving([Answer(410)]) as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        rule_id = created.rule.rule_id
        first, second = enqueue(warehouse, rule_id, clock()), enqueue(warehouse, rule_id, clock())
        results = WebhookSender(warehouse, settings, now=clock).deliver([first])
        assert WebhookSender(warehouse, settings, now=clock).deliver_due() == []
    assert [r.outcome for r in results] == ["gone"]
    assert len(receiver.requests) == 1
    assert get_alert(warehouse, rule_id).rule.disabled_reason == "endpoint answered 410 Gone"
    statuses = {log.delivery.delivery_id: log.delivery.status
                for log in alert_deliveries(warehouse, rule_id)}
    assert statuses == {first: "failed", second: "cancelled"}


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_client_error_other_than_408_and_429_fails_at_once(warehouse, settings, clock, status):
    with receiving([Answer(status, body=b"no such hook")]) as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        [result] = WebhookSender(warehouse, settings, now=clock).deliver(
            [enqueue(warehouse, created.rule.rule_id, clock())]
        )
    assert result.outcome == "failed" and result.next_attempt_at is None
    assert result.error == f"HTTP {status}: no such hook"


def test_redirects_are_not_followed(warehouse, settings, clock):
    with receiving() as elsewhere, receiving(
        [Answer(302, {"location": elsewhere.url})]
    ) as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        [result] = WebhookSender(warehouse, settings, now=clock).deliver(
            [enqueue(warehouse, created.rule.rule_id, clock())]
        )
    assert result.outcome == "failed" and "redirects are not followed" in result.error
    assert elsewhere.requests == []


def test_a_huge_answer_is_read_only_up_to_the_cap(warehouse, settings, clock):
    with receiving([Answer(500, body=b"x" * 5_000_000)]) as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        [result] = WebhookSender(warehouse, settings, now=clock).deliver(
            [enqueue(warehouse, created.rule.rule_id, clock())]
        )
    assert result.outcome == "retry" and result.status_code == 500
    assert len(result.error) < 300


def test_a_refused_connection_is_retried(warehouse, settings, clock):
    with receiving() as receiver:
        url = receiver.url
    created = add_rule(warehouse, settings, url, clock())  # nothing listens there any more
    [result] = WebhookSender(warehouse, settings, now=clock).deliver(
        [enqueue(warehouse, created.rule.rule_id, clock())]
    )
    assert result.outcome == "retry" and result.status_code is None
    assert "ConnectError" in result.error


def test_a_claimed_delivery_is_not_sent_twice(warehouse, settings, clock):
    with receiving() as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        delivery_id = enqueue(warehouse, created.rule.rule_id, clock())
        with warehouse.transaction() as conn:
            assert wa.claim_delivery(conn, delivery_id, clock(), clock() + timedelta(minutes=1))
        sender = WebhookSender(warehouse, settings, now=clock)
        assert sender.deliver([delivery_id]) == [] and sender.deliver_due() == []
        clock.advance(timedelta(minutes=2))  # the claimant died: its lease ran out
        assert [r.outcome for r in sender.deliver_due()] == ["delivered"]
    assert receiver.ids() == [delivery_id]


def test_a_restart_resumes_pending_deliveries(db_path, settings, clock):
    with receiving([Answer(503)]) as receiver:
        with Warehouse.open(db_path) as first:
            created = add_rule(first, settings, receiver.url, clock())
            delivery_id = enqueue(first, created.rule.rule_id, clock())
            [result] = WebhookSender(first, settings, now=clock).deliver([delivery_id])
            assert result.outcome == "retry"
        clock.advance(timedelta(minutes=2))
        with Warehouse.open(db_path) as second:
            [resumed] = WebhookSender(second, settings, now=clock).deliver_due()
    assert resumed.outcome == "delivered" and resumed.attempt == 2
    assert receiver.ids() == [delivery_id, delivery_id]


def test_a_deleted_rule_sends_nothing_more(warehouse, settings, clock):
    from pipeline.alerts import delete_alert

    with receiving() as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        enqueue(warehouse, created.rule.rule_id, clock())
        delete_alert(warehouse, created.rule.rule_id, clock())
        assert WebhookSender(warehouse, settings, now=clock).deliver_due() == []
    assert receiver.requests == []


def test_a_test_event_is_signed_and_logged_and_the_secret_is_never_logged(
    warehouse, settings, clock, caplog
):
    caplog.set_level(logging.DEBUG)
    with receiving() as receiver:
        created = add_rule(warehouse, settings, receiver.url, clock())
        log = send_test(warehouse, settings, created.rule.rule_id, now=clock)
    assert log.delivery.status == "delivered" and log.delivery.event_type == "alert.test"
    assert [(a.attempt, a.status_code, a.outcome) for a in log.attempts] == [(1, 200, "delivered")]
    [request] = receiver.requests
    event = Webhook(created.secret).verify(request.body, request.headers)
    assert event["type"] == "alert.test" and event["data"]["rule"]["id"] == created.rule.rule_id
    assert request.headers["content-type"] == "application/json"
    assert request.headers["host"] == receiver.url.split("/")[2]
    assert created.secret not in caplog.text
    assert created.secret.removeprefix("whsec_") not in caplog.text
    assert f"delivery={log.delivery.delivery_id}" in caplog.text
