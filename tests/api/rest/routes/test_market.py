"""`GET /market`: rent now or wait, against hand counts over replayed snapshots."""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.api.rest.routes.test_index import replay, vastai_body
from tests.conftest import fill_from, module_template

DAY0 = datetime(2026, 3, 1, tzinfo=UTC)
NOW = DAY0 + timedelta(days=4, hours=15, minutes=30)
H100_PER_GPU_HOUR = 1.9333375
"""Vast.ai's recorded H100 offer, per GPU-hour."""
MORNING = [1.0, 1.1, 0.9, 1.2, 1.05]
EVENING = [1.3, 1.0, 1.4, 0.8]
LATEST = 0.95
"""Days 0-3: H100 at 06:00 (× MORNING), none at 12:00, H100 at 18:00 (× EVENING); day 4
(today): 06:00, none at 12:00, and 15:00 (× LATEST). The daily value is the last snapshot's."""


def five_days(warehouse, tmp_path) -> None:
    for day in range(5):
        start = DAY0 + timedelta(days=day)
        last_hour, last_factor = (18, EVENING[day]) if day < 4 else (15, LATEST)
        for hour, body in (
            (6, vastai_body(h100=True, factor=MORNING[day])),
            (12, vastai_body(h100=False)),
            (last_hour, vastai_body(h100=True, factor=last_factor)),
        ):
            replay(warehouse, tmp_path, "vastai", start + timedelta(hours=hour), body)


history = module_template(five_days)
"""`five_days` of Vast.ai answers, collected once for the module."""


@pytest.fixture
def market_client(warehouse, db_path, history):
    fill_from(warehouse, history)
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        yield client


def market(client, **params):
    response = client.get("/market", params={"gpu": "H100-80GB", **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_percentiles_are_over_daily_values_and_say_the_history_is_short(market_client):
    body = market(market_client, days=30)
    daily = [f * H100_PER_GPU_HOUR for f in [*EVENING, LATEST]]
    deciles = statistics.quantiles(daily, n=10, method="inclusive")
    quartiles = statistics.quantiles(daily, n=4, method="inclusive")
    assert (body["days"], body["history_days"]) == (30, 5)
    assert body["now"] == pytest.approx(LATEST * H100_PER_GPU_HOUR)
    assert body["min"] == pytest.approx(min(daily))
    assert body["max"] == pytest.approx(max(daily))
    assert body["p10"] == pytest.approx(deciles[0])
    assert body["p90"] == pytest.approx(deciles[-1])
    assert body["p25"] == pytest.approx(quartiles[0])
    assert body["p75"] == pytest.approx(quartiles[2])
    assert body["median"] == pytest.approx(statistics.median(daily))
    assert body["percentile_now"] == pytest.approx(100 * 2 / 5)  # 0.8 and 0.95 at or below now
    changes = [math.log(b / a) for a, b in zip(daily, daily[1:], strict=False)]
    assert body["volatility"] == pytest.approx(statistics.stdev(changes))


def test_availability_counts_observed_hours_with_an_available_offer(market_client):
    body = market(market_client, below="1.9,2.5")
    observed, with_h100 = 15, 10  # three snapshots a day; none at 12:00 had an H100
    assert body["availability"] == pytest.approx(with_h100 / observed)
    hourly = [f * H100_PER_GPU_HOUR for f in [*MORNING, *EVENING, LATEST]]
    assert body["below"] == [
        {"price": 1.9, "share": pytest.approx(sum(v < 1.9 for v in hourly) / observed)},
        {"price": 2.5, "share": pytest.approx(sum(v < 2.5 for v in hourly) / observed)},
    ]
    assert body["cheapest_hour_utc"] == 15  # mean 0.95 against 1.05 (06:00) and 1.125 (18:00)


def test_default_below_prices_are_the_rounded_p10_median_and_p90(market_client):
    body = market(market_client)
    expected = sorted({round(body[k], 2) for k in ("p10", "median", "p90")})
    assert [b["price"] for b in body["below"]] == expected


def test_a_shorter_window_weighs_only_its_days(market_client):
    body = market(market_client, days=2)
    assert body["history_days"] == 2
    assert body["median"] == pytest.approx((EVENING[3] + LATEST) / 2 * H100_PER_GPU_HOUR)


def test_a_gpu_without_history_answers_nothing_rather_than_inventing(market_client):
    body = market(market_client, gpu="MI300X")
    assert body["history_days"] == 0
    assert (body["now"], body["median"], body["percentile_now"]) == (None, None, None)
    assert body["availability"] == 0.0
    assert body["below"] == []


def test_a_market_that_moved_says_so_and_ranks_now(market_client):
    body = market(market_client, days=30)
    assert body["movement"] == "moved" and 0 < body["percentile_now"] < 100


def test_a_flat_market_says_no_movement_and_never_an_extreme_percentile(
    warehouse, db_path, tmp_path
):
    """Issue 42: one price all window once read "now: 100th percentile" (an agent reads wait)."""
    for day in range(4):
        at = DAY0 + timedelta(days=day, hours=6)
        replay(warehouse, tmp_path, "vastai", at, vastai_body(h100=True))
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        body = market(client, days=30)
    assert body["history_days"] == 4 and body["min"] == body["max"] == body["now"]
    assert body["movement"] == "none" and body["percentile_now"] is None
