"""A quote carries its 30-day range: the job at the p10, median and p90 of its own provider's
daily lowest price for its GPU, and where the offer's price sits among those days."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.api.rest.routes.test_index import replay, vastai_body

QLORA_70B = {"model": "Llama-3.1-70B", "method": "qlora", "tokens": "50M"}
H100_PER_GPU_HOUR = 1.9333375
FACTORS = [1.2, 0.8, 1.0, 0.9]
"""Vast.ai's H100 × these, one snapshot a day for four days, the last one today."""


@pytest.fixture
def client(warehouse, db_path, tmp_path):
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for days_ago, factor in zip([3, 2, 1, 0], FACTORS, strict=True):
        at = hour - timedelta(days=days_ago)
        replay(warehouse, tmp_path, "vastai", at, vastai_body(h100=True, factor=factor))
    with TestClient(create_app(Settings(db=db_path, scheduler=False), warehouse)) as c:
        yield c


def test_each_quote_shows_the_job_at_its_providers_30_day_range(client):
    body = client.post("/quotes", json=QLORA_70B).json()
    [h100] = [q for q in body["quotes"] if q["offer"]["gpu"] == "H100-80GB"]
    daily = [f * H100_PER_GPU_HOUR for f in FACTORS]
    gpu_hours = h100["gpus"] * h100["hours"]
    deciles = statistics.quantiles(daily, n=10, method="inclusive")
    history = h100["history"]
    assert (history["days"], history["history_days"]) == (30, 4)
    assert history["p10_cost_usd"] == pytest.approx(deciles[0] * gpu_hours)
    assert history["median_cost_usd"] == pytest.approx(statistics.median(daily) * gpu_hours)
    assert history["p90_cost_usd"] == pytest.approx(deciles[-1] * gpu_hours)
    assert history["now_price_per_gpu_hour"] == pytest.approx(0.9 * H100_PER_GPU_HOUR)
    assert history["percentile_now"] == pytest.approx(100 * 2 / 4)  # 0.8 and 0.9 at or below
    assert (history["provider"], history["gpu"], history["form_factor"]) == (
        "vastai", "H100-80GB", "SXM"
    )  # fmt: skip
    assert (history["basis"], history["movement"]) == ("provider_lowest_available", "moved")


LAMBDA_H100_8X_PER_GPU_HOUR = 3.99
"""Lambda's recorded 8 × H100 SXM node per GPU-hour, its lowest H100 price."""


@pytest.fixture
def two_markets(warehouse, db_path, tmp_path):
    """Vast.ai's H100 moving (× FACTORS) and Lambda's unchanged, one snapshot each a day."""
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for days_ago, factor in zip([3, 2, 1, 0], FACTORS, strict=True):
        at = hour - timedelta(days=days_ago)
        replay(warehouse, tmp_path, "vastai", at, vastai_body(h100=True, factor=factor))
        replay(warehouse, tmp_path, "lambda", at)
    with TestClient(create_app(Settings(db=db_path, scheduler=False), warehouse)) as c:
        yield c


def test_a_quote_is_priced_from_its_own_provider_and_a_flat_history_ranks_nothing(two_markets):
    """Issue 42: Lambda's quote once read the cross-provider index ($ far from its own price)
    and "now: 100th percentile" on a price that never moved."""
    body = two_markets.post("/quotes", json={**QLORA_70B, "provider": "lambda"}).json()
    [node] = [q for q in body["quotes"] if q["offer"]["gpu"] == "H100-80GB" and q["gpus"] == 8]
    gpu_hours = node["gpus"] * node["hours"]
    history = node["history"]
    assert history["provider"] == "lambda" and history["history_days"] == 4
    for field in ("p10_cost_usd", "median_cost_usd", "p90_cost_usd"):
        assert history[field] == pytest.approx(LAMBDA_H100_8X_PER_GPU_HOUR * gpu_hours)
    assert history["p10_cost_usd"] == pytest.approx(node["cost_usd"])  # the offer's own market
    assert history["movement"] == "none" and history["percentile_now"] is None
    vast = two_markets.post("/quotes", json={**QLORA_70B, "provider": "vastai"}).json()
    [moving] = [q["history"] for q in vast["quotes"] if q["offer"]["gpu"] == "H100-80GB"]
    assert moving["movement"] == "moved" and moving["percentile_now"] == pytest.approx(50)


def test_a_quote_without_index_history_in_the_window_has_no_block(db_path, tmp_path):
    from warehouse import Warehouse

    with Warehouse.open(db_path) as warehouse:
        replay(warehouse, tmp_path, "vastai", datetime.now(UTC) - timedelta(days=60))
        app = create_app(Settings(db=db_path, scheduler=False), warehouse)
        with TestClient(app) as client:
            body = client.post("/quotes", json=QLORA_70B).json()
    assert body["quotes"] and all(q["history"] is None for q in body["quotes"])
