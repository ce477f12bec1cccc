"""Index methodology v1 leaves the hyperscalers out: their list prices never move its medians."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline.collection.collect import run_collection
from pipeline.market.index import (
    OUTSIDE_INDEX,
    ExplainQuery,
    IndexQuery,
    explain_index,
    index_series,
    latest_index_values,
)
from tests.conftest import FIXTURES

AT = datetime(2026, 3, 1, 10, tzinfo=UTC)
MARKET = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}
CLOUDS = {"aws": FIXTURES / "aws_answers", "azure": FIXTURES / "azure_answers"}


def index_of(warehouse):
    query = IndexQuery(gpu="H100-80GB", interval="1h")
    return index_series(warehouse, query, AT + timedelta(hours=2))["series"]


def test_the_hyperscalers_are_outside_methodology_v1():
    assert {"aws", "azure"} <= OUTSIDE_INDEX
    assert not {"vastai", "runpod", "lambda", "coreweave"} & OUTSIDE_INDEX


def test_adding_hyperscaler_offers_leaves_index_v1_unchanged(warehouse):
    run_collection(list(MARKET), warehouse, replays=MARKET, now=lambda: AT)
    before, latest = index_of(warehouse), latest_index_values(warehouse)
    reports = run_collection(list(CLOUDS), warehouse, replays=CLOUDS, now=lambda: AT)
    assert [r.status for r in reports] == ["ok", "ok"]
    assert any(p["points"] for p in before)  # the market gave the index values to keep
    assert index_of(warehouse) == before
    assert latest_index_values(warehouse) == latest


def test_explain_names_the_hyperscalers_as_outside_the_methodology(warehouse):
    run_collection([*MARKET, *CLOUDS], warehouse, replays={**MARKET, **CLOUDS}, now=lambda: AT)
    explained = explain_index(warehouse, ExplainQuery(gpu="H100-80GB", interval="1h", t=AT))
    assert {c["provider"] for c in explained["contributions"]}.isdisjoint({"aws", "azure"})
    reasons = {e["provider"]: e["reason"] for e in explained["excluded"]}
    assert reasons["aws"] == reasons["azure"] == "not in methodology v1"
