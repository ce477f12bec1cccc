"""Prometheus metrics, computed from the warehouse at scrape time."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from datetime import datetime
from importlib import metadata

import duckdb
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pipeline.market.freshness import provider_freshness
from pipeline.settings import Settings
from warehouse import Warehouse
from warehouse import queries as q

__all__ = ["PriceCollector", "build_info"]


def build_info() -> dict[str, str]:
    """Labels of `gpuprices_build_info`: this package's, Python's and DuckDB's versions."""
    try:
        version = metadata.version("gpuprices")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        version = "unknown"
    return {
        "version": version,
        "python_version": platform.python_version(),
        "duckdb_version": duckdb.__version__,
    }


class PriceCollector(Collector):
    def __init__(
        self, warehouse: Warehouse, settings: Settings, clock: Callable[[], datetime]
    ) -> None:
        self._warehouse = warehouse
        self._settings = settings
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        info = build_info()
        build = GaugeMetricFamily(
            "gpuprices_build_info", "Always 1; the labels say what is running", labels=list(info)
        )
        build.add_metric(list(info.values()), 1.0)
        yield build

        with self._warehouse.cursor() as cur:
            prices = q.current_price_stats(cur)
            runs = q.run_stats(cur)
        labels = ["gpu", "provider", "pricing"]
        lowest = GaugeMetricFamily(
            "gpuprices_lowest_price_per_gpu_hour_usd",
            "Lowest price per GPU-hour among available offers in the current snapshot",
            labels=labels,
        )
        offers = GaugeMetricFamily(
            "gpuprices_offers", "Offers listed in the current snapshot", labels=labels
        )
        available = GaugeMetricFamily(
            "gpuprices_offers_available",
            "Offers rentable now in the current snapshot",
            labels=labels,
        )
        for row in prices:
            key = [row["gpu"], row["provider"], row["pricing"]]
            if row["lowest_price"] is not None:
                lowest.add_metric(key, row["lowest_price"])
            offers.add_metric(key, row["offers"])
            available.add_metric(key, row["available"])
        yield from (lowest, offers, available)

        total = CounterMetricFamily(
            "gpuprices_collection_runs", "Collection runs so far", labels=["provider"]
        )
        failed = CounterMetricFamily(
            "gpuprices_collection_failures", "Failed collection runs so far", labels=["provider"]
        )
        duration = GaugeMetricFamily(
            "gpuprices_collection_last_duration_seconds",
            "Duration of the last collection run",
            labels=["provider"],
        )
        for row in runs:
            total.add_metric([row["provider"]], row["runs"])
            failed.add_metric([row["provider"]], row["failures"])
            duration.add_metric([row["provider"]], row["last_seconds"] or 0.0)
        yield from (total, failed, duration)

        age = GaugeMetricFamily(
            "gpuprices_data_age_seconds", "Age of the snapshot served", labels=["provider"]
        )
        stale = GaugeMetricFamily(
            "gpuprices_data_stale", "1 when the snapshot served is stale", labels=["provider"]
        )
        success = GaugeMetricFamily(
            "gpuprices_collection_last_success_timestamp_seconds",
            "Unix time the last successful collection run finished",
            labels=["provider"],
        )
        last_run = GaugeMetricFamily(
            "gpuprices_collection_last_run_timestamp_seconds",
            "Unix time the last collection run (ok or failed) started",
            labels=["provider"],
        )
        for fresh in provider_freshness(self._warehouse, self._settings, self._clock()):
            if fresh.age_seconds is not None:
                age.add_metric([fresh.provider], fresh.age_seconds)
            stale.add_metric([fresh.provider], 1.0 if fresh.stale else 0.0)
            if fresh.last_success_at is not None:
                success.add_metric([fresh.provider], fresh.last_success_at.timestamp())
            if fresh.last_run_at is not None:
                last_run.add_metric([fresh.provider], fresh.last_run_at.timestamp())
        yield from (age, stale, success, last_run)
