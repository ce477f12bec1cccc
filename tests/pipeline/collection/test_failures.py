"""A failed provider says why in words, and is tried again sooner than its interval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from pipeline.collection.collect import run_collection
from pipeline.collection.failures import failure_words
from pipeline.collection.schedule import Collector, retry_delay
from pipeline.settings import Settings
from scrapers import vastai
from tests.pipeline.collection.test_schedule import wait_until


def _failing(error: str):
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(error, request=request)

    return lambda: httpx.Client(transport=httpx.MockTransport(fail))


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ("[Errno -2] Name or service not known", "no network: could not resolve console.vast.ai"),
        ("[Errno -3] Temporary failure in name resolution", "no network: could not resolve"),
        ("[Errno 101] Network is unreachable", "no network: console.vast.ai is unreachable"),
        ("[Errno 111] Connection refused", "could not connect to console.vast.ai: connection "
         "refused"),
    ],
)
def test_a_network_failure_is_stored_in_words(warehouse, error, words):
    (report,) = run_collection(["vastai"], warehouse, client_factory=_failing(error))
    assert report.status == "failed"
    assert report.error is not None and report.error.startswith(f"vastai: {words}")
    assert "Errno" not in report.error and "ConnectError" not in report.error


def test_a_timeout_and_our_own_errors_read_as_sentences():
    request = httpx.Request("POST", vastai.URL)
    assert failure_words(httpx.ReadTimeout("", request=request)) == (
        "timed out: console.vast.ai did not answer in time"
    )
    assert failure_words(ValueError("bad")) == "ValueError: bad"


def test_retries_come_after_a_minute_then_doubling_up_to_the_interval():
    six_hours = timedelta(hours=6)
    delays = [retry_delay(n, six_hours) for n in range(1, 12)]
    assert delays[:4] == [timedelta(minutes=m) for m in (1, 2, 4, 8)]
    assert max(delays) == six_hours and delays == sorted(delays)
    assert retry_delay(1, timedelta(seconds=20)) == timedelta(seconds=20)


def test_a_failed_provider_is_scheduled_again_within_a_minute(warehouse):
    settings = Settings(providers=["lambda"], intervals={"lambda": "6h"}, jitter_s=0)
    collector = Collector(warehouse, settings, client_factory=_failing("unused"))
    collector.start()  # lambda has no key in tests: its start-up run fails
    try:
        wait_until(lambda: collector.failures.get("lambda") == 1)
        wait_until(lambda: collector.next_run_at("lambda") is not None)
        next_run = collector.next_run_at("lambda")
    finally:
        collector.shutdown()
    assert next_run - datetime.now(UTC) <= timedelta(minutes=1)
