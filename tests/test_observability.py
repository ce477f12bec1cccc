"""`/metrics`, and the Grafana dashboard and Prometheus files in docs/ checked against it.

No Prometheus or Grafana runs here: their files are parsed, and every metric they ask for must be
one that a real scrape of the service exports, as tests/test_deployment.py checks compose.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DASHBOARD = json.loads((DOCS / "grafana-dashboard.json").read_text())
PROMETHEUS = yaml.safe_load((DOCS / "prometheus.yml").read_text())
RULES = yaml.safe_load((DOCS / "gpuprices-rules.yml").read_text())
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
PROMETHEUS_BUILTINS = frozenset({"up"})
"""Series Prometheus itself writes for every target."""
RAN_AT = datetime(2026, 3, 1, 10, tzinfo=UTC)


@pytest.fixture(scope="module")
def scrape(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """Sample name -> samples, from `/metrics` after one good Vast.ai run and a failed RunPod."""
    from warehouse import Warehouse

    db = tmp_path_factory.mktemp("metrics") / "gpuprices.duckdb"
    with Warehouse.open(db) as warehouse:
        run_collection(
            ["vastai"],
            warehouse,
            replays={"vastai": FIXTURES / "vastai_bundles.json"},
            now=lambda: RAN_AT,
        )
        broken = db.with_name("runpod.json")  # an error page where the JSON should be
        broken.write_text("<html><body>502 Bad Gateway</body></html>")
        failed = run_collection(
            ["runpod"], warehouse, replays={"runpod": broken}, now=lambda: RAN_AT
        )
        assert [r.status for r in failed] == ["failed"]
        settings = Settings(db=db, scheduler=False)
        with TestClient(create_app(settings, warehouse, clock=lambda: RAN_AT)) as client:
            text = client.get("/metrics").text
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers before `{`, `[`, `)` or a comparison,
    less functions, aggregations and label names."""
    without_labels = re.sub(r"\{[^}]*\}", "{}", expr)
    without_by = re.sub(r"\b(by|without)\s*\([^)]*\)", "", without_labels)
    words = set(re.findall(r"[a-zA-Z_][a-zA-Z0-9_:]*", without_by))
    return {w for w in words if w.startswith("gpuprices_") or w in PROMETHEUS_BUILTINS}


def _dashboard_queries() -> list[str]:
    queries = [t["expr"] for p in DASHBOARD["panels"] for t in p["targets"]]
    queries += [v["definition"] for v in DASHBOARD["templating"]["list"]]
    return queries


def test_metrics_say_when_each_provider_last_succeeded(scrape):
    success = {
        s.labels["provider"]: s.value
        for s in scrape["gpuprices_collection_last_success_timestamp_seconds"]
    }
    assert success == {"vastai": RAN_AT.timestamp()}  # runpod never succeeded: no sample
    last_run = {
        s.labels["provider"] for s in scrape["gpuprices_collection_last_run_timestamp_seconds"]
    }
    assert last_run == {"vastai", "runpod"}


def test_metrics_carry_a_build_info_gauge(scrape):
    from importlib import metadata

    [info] = scrape["gpuprices_build_info"]
    assert info.value == 1
    assert info.labels["version"] == metadata.version("gpuprices")
    assert set(info.labels) == {"version", "python_version", "duckdb_version"}


def test_the_grafana_dashboard_asks_only_for_metrics_the_service_exports(scrape):
    asked = set().union(*(_names(q) for q in _dashboard_queries()))
    assert asked - set(scrape) - PROMETHEUS_BUILTINS == set()
    assert {
        "gpuprices_lowest_price_per_gpu_hour_usd",
        "gpuprices_collection_last_success_timestamp_seconds",
        "gpuprices_build_info",
    } <= asked


def test_every_dashboard_variable_used_is_defined_and_every_panel_has_a_query():
    defined = {v["name"] for v in DASHBOARD["templating"]["list"]}
    used = set(re.findall(r"\$(\w+)", " ".join(_dashboard_queries())))
    assert used <= defined | {"__all"}
    assert all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in DASHBOARD["panels"])
    [source] = DASHBOARD["__inputs"]
    assert source["pluginId"] == "prometheus"


def test_the_alert_rules_ask_only_for_metrics_the_service_exports(scrape):
    exprs = [rule["expr"] for group in RULES["groups"] for rule in group["rules"]]
    asked = set().union(*(_names(str(e)) for e in exprs))
    assert asked and asked - set(scrape) - PROMETHEUS_BUILTINS == set()


def test_the_prometheus_example_scrapes_the_compose_services_on_their_ports():
    services = COMPOSE["services"]
    for job in PROMETHEUS["scrape_configs"]:
        assert job["metrics_path"] == "/metrics"
        for target in (t for c in job["static_configs"] for t in c["targets"]):
            name, port = target.split(":")
            command = services[name].get("command") or services["gpuprices"]["command"]
            assert command[command.index("--port") + 1] == port
    assert PROMETHEUS["rule_files"] == ["gpuprices-rules.yml"]
