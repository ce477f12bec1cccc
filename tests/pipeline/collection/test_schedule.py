"""The schedule with respx-mocked providers and short real intervals (bounded, a few seconds)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import respx

from pipeline.collection.schedule import Collector
from pipeline.settings import Settings
from scrapers import coreweave, runpod, vastai
from tests.conftest import fixture_bytes


def runs(warehouse, provider: str, status: str = "ok") -> int:
    with warehouse.cursor() as cur:
        return cur.execute(
            "SELECT count(*) FROM collection_runs WHERE provider = ? AND status = ?",
            [provider, status],
        ).fetchone()[0]


def wait_until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


@pytest.fixture
def mocked():
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        router.post(vastai.URL).mock(
            return_value=httpx.Response(200, content=fixture_bytes("vastai_bundles.json"))
        )
        router.post(runpod.URL).mock(
            return_value=httpx.Response(200, content=fixture_bytes("runpod_gpu_types.json"))
        )
        router.get(coreweave.URL).mock(
            return_value=httpx.Response(200, content=fixture_bytes("coreweave_pricing.html"))
        )
        yield router


def test_jobs_are_configured_one_per_provider_without_overlap(warehouse, client_factory):
    settings = Settings(providers=["vastai", "coreweave"])
    collector = Collector(warehouse, settings, client_factory=client_factory, run_at_start=False)
    collector.start()
    jobs = {job.id: job for job in collector.scheduler.get_jobs()}
    collector.shutdown()
    assert set(jobs) == {"collect:vastai", "collect:coreweave", "deliver:webhooks", "prune:raw"}
    vast = jobs["collect:vastai"]
    assert vast.trigger.interval.total_seconds() == 600
    assert jobs["collect:coreweave"].trigger.interval.total_seconds() == 6 * 3600
    assert (vast.max_instances, vast.coalesce) == (1, True)
    assert vast.misfire_grace_time == 300
    assert vast.trigger.jitter == 30


def test_jobs_run_on_their_intervals_from_start_up(warehouse, client_factory, mocked):
    settings = Settings(
        providers=["vastai", "coreweave"],
        intervals={"vastai": 0.4, "coreweave": 3600},
        jitter_s=0,
    )
    collector = Collector(warehouse, settings, client_factory=client_factory)
    collector.start()
    try:
        wait_until(lambda: runs(warehouse, "coreweave") >= 1)
        wait_until(lambda: runs(warehouse, "vastai") >= 6)
    finally:
        collector.shutdown()
    assert runs(warehouse, "coreweave") == 1  # the start-up run; the next is an hour away
    assert runs(warehouse, "vastai", "failed") == 0


def test_a_hanging_provider_neither_delays_the_others_nor_overlaps_itself(
    warehouse, client_factory, mocked
):
    release = threading.Event()
    calls = []

    def hang(request):
        calls.append(request)
        release.wait(10)
        return httpx.Response(200, content=fixture_bytes("vastai_bundles.json"))

    mocked.post(vastai.URL).mock(side_effect=hang)
    settings = Settings(
        providers=["vastai", "runpod"], intervals={"vastai": 0.2, "runpod": 0.3}, jitter_s=0
    )
    collector = Collector(warehouse, settings, client_factory=client_factory)
    collector.start()
    try:
        wait_until(lambda: runs(warehouse, "runpod") >= 3)
        assert len(calls) == 1  # vastai is still in its first run: no second one started
        assert runs(warehouse, "vastai") == 0
    finally:
        release.set()
        collector.shutdown()
    # Shutting down while vastai was mid-fetch abandoned that run before its write.
    assert runs(warehouse, "vastai") == 0 and runs(warehouse, "vastai", "failed") == 0
