"""A quote carries its 30-day range: the job at the index's p10, median and p90, and now."""

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


def test_each_quote_shows_the_job_at_the_indexs_30_day_range(client):
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


def test_a_quote_without_index_history_in_the_window_has_no_block(db_path, tmp_path):
    from warehouse import Warehouse

    with Warehouse.open(db_path) as warehouse:
        replay(warehouse, tmp_path, "vastai", datetime.now(UTC) - timedelta(days=60))
        app = create_app(Settings(db=db_path, scheduler=False), warehouse)
        with TestClient(app) as client:
            body = client.post("/quotes", json=QLORA_70B).json()
    assert body["quotes"] and all(q["history"] is None for q in body["quotes"])
