"""Prometheus metrics, computed from the warehouse at scrape time."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from typing import Any

import duckdb
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pipeline.market.freshness import provider_freshness
from pipeline.market.index import latest_index_values
from pipeline.market.quality import provider_health
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
            sources: dict[str, list[Any]] = {
                "prices": q.current_price_stats(cur),
                "runs": q.run_stats(cur),
            }
        sources["freshness"] = provider_freshness(self._warehouse, self._settings, self._clock())
        sources["index"] = latest_index_values(self._warehouse)
        sources["quality"] = [
            {"provider": name, **run} for name, run in provider_health(self._warehouse).items()
        ]
        for spec in _FAMILIES:
            family = spec.kind(spec.name, spec.documentation, labels=list(spec.labels))
            for row in sources[spec.source]:
                value = spec.value(row)
                if value is not None:
                    family.add_metric([_field(row, label) for label in spec.labels], value)
            yield family


def _field(row: Any, name: str) -> str:
    return str(row[name] if isinstance(row, dict) else getattr(row, name))


def _timestamp(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None


@dataclass(frozen=True, slots=True)
class _Family:
    kind: type[GaugeMetricFamily] | type[CounterMetricFamily]
    name: str
    documentation: str
    source: str
    """prices (per gpu, provider, pricing), runs, freshness or quality (per provider), index
    (per gpu, pricing)."""
    labels: tuple[str, ...]
    value: Callable[[Any], float | None]


_PRICE = ("gpu", "provider", "pricing")
_PROVIDER = ("provider",)
_INDEX = ("gpu", "pricing")
_FAMILIES = (
    _Family(GaugeMetricFamily, "gpuprices_lowest_price_per_gpu_hour_usd",
            "Lowest price per GPU-hour among available offers in the current snapshot",
            "prices", _PRICE, lambda r: r["lowest_price"]),
    _Family(GaugeMetricFamily, "gpuprices_offers", "Offers listed in the current snapshot",
            "prices", _PRICE, lambda r: r["offers"]),
    _Family(GaugeMetricFamily, "gpuprices_offers_available",
            "Offers rentable now in the current snapshot", "prices", _PRICE,
            lambda r: r["available"]),
    _Family(CounterMetricFamily, "gpuprices_collection_runs", "Collection runs so far", "runs",
            _PROVIDER, lambda r: r["runs"]),
    _Family(CounterMetricFamily, "gpuprices_collection_failures",
            "Failed collection runs so far", "runs", _PROVIDER, lambda r: r["failures"]),
    _Family(GaugeMetricFamily, "gpuprices_collection_last_duration_seconds",
            "Duration of the last collection run", "runs", _PROVIDER,
            lambda r: r["last_seconds"] or 0.0),
    _Family(GaugeMetricFamily, "gpuprices_data_age_seconds", "Age of the snapshot served",
            "freshness", _PROVIDER, lambda f: f.age_seconds),
    _Family(GaugeMetricFamily, "gpuprices_data_stale", "1 when the snapshot served is stale",
            "freshness", _PROVIDER, lambda f: 1.0 if f.stale else 0.0),
    _Family(GaugeMetricFamily, "gpuprices_collection_last_success_timestamp_seconds",
            "Unix time the last successful collection run finished", "freshness", _PROVIDER,
            lambda f: _timestamp(f.last_success_at)),
    _Family(GaugeMetricFamily, "gpuprices_collection_last_run_timestamp_seconds",
            "Unix time the last collection run (ok or failed) started", "freshness", _PROVIDER,
            lambda f: _timestamp(f.last_run_at)),
    _Family(GaugeMetricFamily, "gpuprices_provider_resolved_share",
            "Share of the last run's offers resolved to a catalog GPU (0-1)", "quality",
            _PROVIDER, lambda r: r["resolved_share"]),
    _Family(GaugeMetricFamily, "gpuprices_provider_rejects", "Records the last run rejected",
            "quality", _PROVIDER, lambda r: r["reject_count"]),
    _Family(GaugeMetricFamily, "gpuprices_provider_unknown_gpu_names",
            "GPU spellings of the last run the catalog does not know", "quality", _PROVIDER,
            lambda r: r["unknown_names"]),
    _Family(GaugeMetricFamily, "gpuprices_provider_shape_drift",
            "Answer fields added or missing against the previous good run", "quality",
            _PROVIDER, lambda r: r["drift"]),
    _Family(GaugeMetricFamily, "gpuprices_provider_degraded",
            "1 when the provider's last run is degraded (see /quality)", "quality", _PROVIDER,
            lambda r: 1.0 if r["health"] == "degraded" else 0.0),
    _Family(GaugeMetricFamily, "gpuprices_index_price_per_gpu_hour_usd",
            "Latest hourly price index (methodology v1): median of providers' cheapest available",
            "index", _INDEX, lambda r: r["value"]),
)  # fmt: skip
