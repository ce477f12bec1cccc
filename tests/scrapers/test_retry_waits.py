"""RetryTransport's waits: `Retry-After` read safely whatever it says, and a wait a stop ends."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from scrapers import ProviderError, RetryTransport, build_client
from scrapers.base import MAX_RETRY_AFTER, interruptible_sleep, parse_retry_after
from scrapers.errors import FetchCancelledError
from scrapers.vastai import URL

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "wait"),
    [
        ("120", timedelta(seconds=120)),
        (" 007 ", timedelta(seconds=7)),
        ("Sun, 01 Mar 2026 12:05:00 GMT", timedelta(minutes=5)),
        ("Sun, 01 Mar 2026 12:05:00 -0000", timedelta(minutes=5)),
        ("Sun, 01 Mar 2026 11:00:00 GMT", timedelta(0)),
        ("99999999999999999999", MAX_RETRY_AFTER),
        ("1" + "0" * 5000, MAX_RETRY_AFTER),
        ("Wed, 21 Oct 99999 07:28:00 GMT", None),
        ("Mon, 32 Foo 2015 25:61:00 GMT", None),
        ("-5", None),
        ("1.5", None),
        ("\u00b2", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date_and_never_raises(value, wait):
    assert parse_retry_after(value, NOW) == wait


def test_a_set_stop_ends_a_retry_wait_at_once_and_the_retry_is_not_made():
    asked: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(503, headers={"retry-after": "60"})

    stop = threading.Event()
    stop.set()
    transport = RetryTransport(httpx.MockTransport(answer), sleep=interruptible_sleep(stop))
    with build_client(transport) as client, pytest.raises(FetchCancelledError) as raised:
        client.get(URL)
    assert isinstance(raised.value, ProviderError) and len(asked) == 1
    assert transport.waits_s == [60]


def test_an_unset_stop_lets_the_wait_run_out_and_the_retry_go_ahead():
    answers = iter([httpx.Response(429, headers={"retry-after": "0"}), httpx.Response(200)])
    transport = RetryTransport(
        httpx.MockTransport(lambda request: next(answers)),
        sleep=interruptible_sleep(threading.Event()),
    )
    with build_client(transport) as client:
        assert client.get(URL).status_code == 200
