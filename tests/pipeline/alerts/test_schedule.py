"""`serve`'s schedule sends webhooks from a job and a pool of its own."""

from __future__ import annotations

from pipeline.collection.schedule import Collector
from pipeline.settings import Settings


def test_the_schedule_has_one_delivery_job_on_its_own_worker(warehouse, client_factory):
    settings = Settings(providers=["vastai"], webhook_poll="7s")
    collector = Collector(warehouse, settings, client_factory=client_factory, run_at_start=False)
    collector.start()
    job = collector.scheduler.get_job("deliver:webhooks")
    collector.shutdown()
    assert job.executor == "webhooks" and job.trigger.interval.total_seconds() == 7
    assert (job.max_instances, job.coalesce) == (1, True)
    assert job.func.__name__ == "deliver_webhooks" and job.args == (collector.webhooks,)
