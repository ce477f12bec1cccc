from __future__ import annotations

import io
import json
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import orjson
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, fill_from, module_template

T0 = datetime(2026, 3, 1, 10, tzinfo=UTC)
TIMES = [T0, T0 + timedelta(hours=2), T0 + timedelta(hours=4)]
NOW = T0 + timedelta(hours=5)


def body_with_h100_prices(factor: float) -> bytes:
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    extra = []
    for i, price in enumerate([8.0, 12.0, 16.0]):
        record = dict(body["offers"][0])
        record["id"] = 90_000 + i
        record["dph_base"] = price * factor
        record["min_bid"] = None
        extra.append(record)
    body["offers"] = [*body["offers"][1:], *extra]  # three 8-GPU H100 offers
    return orjson.dumps(body)


def three_collections(warehouse, folder: Path) -> None:
    for index, (at, factor) in enumerate(zip(TIMES, [1.0, 1.5, 2.0], strict=True)):
        path = folder / f"vast-{index}.json"
        path.write_bytes(body_with_h100_prices(factor))
        run_collection(["vastai"], warehouse, replays={"vastai": path}, now=lambda at=at: at)


history = module_template(three_collections)
"""`three_collections`, collected once for the module."""


@pytest.fixture
def history_client(warehouse, db_path, history):
    fill_from(warehouse, history)
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        yield client


def h100_on_demand(client, **params):
    body = client.get(
        "/prices/history",
        params={
            "gpu": "H100-80GB",
            "pricing": "on_demand",
            "since": "2026-03-01T00:00:00Z",
            **params,
        },
    ).json()
    [series] = body["series"]
    return series["points"]


def test_three_collections_give_three_points_with_exact_statistics(history_client):
    points = h100_on_demand(history_client)
    assert [p["t"] for p in points] == [
        "2026-03-01T10:00:00Z",
        "2026-03-01T12:00:00Z",
        "2026-03-01T14:00:00Z",
    ]
    for point, factor in zip(points, [1.0, 1.5, 2.0], strict=True):
        per_gpu = [price * factor / 8 for price in (8.0, 12.0, 16.0)]
        assert point["min"] == pytest.approx(min(per_gpu))
        assert point["median"] == pytest.approx(statistics.median(per_gpu))
        assert point["max"] == pytest.approx(max(per_gpu))
        assert point["p25"] == pytest.approx(
            statistics.quantiles(per_gpu, n=4, method="inclusive")[0]
        )
        assert (point["offers"], point["available"], point["snapshots"]) == (3, 3, 1)


def test_a_provider_down_for_an_hour_is_a_gap_not_a_zero(history_client):
    points = h100_on_demand(history_client)
    hours = {p["t"] for p in points}
    assert "2026-03-01T11:00:00Z" not in hours and "2026-03-01T13:00:00Z" not in hours
    assert all(p["min"] > 0 for p in points)


def test_a_daily_bucket_pools_the_snapshots_of_the_day(history_client):
    [day] = h100_on_demand(history_client, interval="1d")
    assert day["t"] == "2026-03-01T00:00:00Z" and day["snapshots"] == 3
    assert day["min"] == pytest.approx(1.0) and day["max"] == pytest.approx(4.0)
    assert day["median"] == pytest.approx(2.25)  # the median of the three snapshot medians


def test_as_of_between_two_collections_returns_the_earlier_snapshot(history_client):
    body = history_client.get(
        "/offers", params={"gpu": "H100-80GB", "as_of": "2026-03-01T13:00:00Z"}
    ).json()
    assert {o["observed_at"] for o in body["offers"]} == {"2026-03-01T12:00:00Z"}
    assert sorted(o["price_per_hour"] for o in body["offers"]) == [12.0, 18.0, 24.0]
    assert body["providers"][0]["observed_at"] == "2026-03-01T12:00:00Z"


def test_as_of_before_any_collection_is_empty_and_in_the_future_is_422(history_client):
    assert (
        history_client.get("/offers", params={"as_of": "2026-02-01T00:00:00Z"}).json()["count"] == 0
    )
    response = history_client.get("/offers", params={"as_of": "2027-01-01T00:00:00Z"})
    assert response.status_code == 422 and "future" in response.json()["detail"]


def test_as_of_older_than_the_retention_window_says_so(warehouse, db_path):
    settings = Settings(db=db_path, scheduler=False, retention="30d")
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        response = client.get("/offers", params={"as_of": "2026-01-01T00:00:00Z"})
    assert response.status_code == 422 and "retention" in response.json()["detail"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"gpu": "NOT-A-GPU"}, "Unknown GPU"),
        ({"gpu": "H100", "interval": "5m"}, "interval"),
        (
            {"gpu": "H100", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
            "must be before",
        ),
        ({"gpu": "H100", "since": "2026-03-01T00:00:00"}, "timezone"),
    ],
)
def test_bad_history_parameters_are_422(history_client, params, message):
    response = history_client.get("/prices/history", params=params)
    assert response.status_code == 422
    assert message in json.dumps(response.json())


def test_offers_export_as_parquet_opens_in_duckdb_with_the_offer_schema(history_client, tmp_path):
    response = history_client.get("/export/offers.parquet", params={"gpu": "H100-80GB"})
    assert response.status_code == 200
    path = tmp_path / "offers.parquet"
    path.write_bytes(response.content)
    conn = duckdb.connect()
    described = {
        row[0]: row[1] for row in conn.execute(f"DESCRIBE SELECT * FROM '{path}'").fetchall()
    }
    assert described["price_per_gpu_hour"] == "DOUBLE"
    assert described["observed_at"].startswith("TIMESTAMP")
    count = conn.execute(f"SELECT count(*) FROM '{path}'").fetchone()[0]
    assert count == history_client.get("/offers", params={"gpu": "H100-80GB"}).json()["count"]


def test_history_export_as_csv_has_a_header_and_iso_times(history_client):
    response = history_client.get(
        "/export/history.csv", params={"gpu": "H100-80GB", "since": "2026-03-01T00:00:00Z"}
    )
    lines = response.text.splitlines()
    assert lines[0].split(",")[:5] == ["gpu", "form_factor", "provider", "pricing", "t"]
    assert datetime.fromisoformat(lines[1].split(",")[4]) == T0


def test_unknown_export_format_is_422(history_client):
    assert history_client.get("/export/offers.xlsx").status_code == 422


def test_metrics_parse_and_include_the_lowest_a100_80gb_price(history_client):
    text = history_client.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    lowest = {
        (s.labels["gpu"], s.labels["pricing"]): s.value
        for s in families["gpuprices_lowest_price_per_gpu_hour_usd"].samples
    }
    assert lowest[("A100-80GB", "spot")] == pytest.approx(0.475)
    assert lowest[("A100-80GB", "on_demand")] == pytest.approx(0.8)
    runs = {
        s.labels["provider"]: s.value
        for s in families["gpuprices_collection_runs"].samples
        if s.name.endswith("_total")
    }
    assert runs == {"vastai": 3}
    assert "gpuprices_data_age_seconds" in families


def test_csv_export_io_reads_back(history_client):
    import csv

    text = history_client.get("/export/offers.csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and datetime.fromisoformat(rows[0]["observed_at"]) == TIMES[-1]


@pytest.mark.parametrize("interval", ["1h", "6h", "1d", "1w"])
def test_the_api_body_from_duckdb_json_matches_the_python_history(
    history_client, warehouse, interval
):
    from api.rest.schemas import HistoryOut
    from pipeline.market.history import HistoryQuery, price_history

    params = {"gpu": "H100", "interval": interval, "since": "2026-02-20T00:00:00Z"}
    body = history_client.get("/prices/history", params=params).json()
    query = HistoryQuery(gpu="H100", interval=interval, since=datetime(2026, 2, 20, tzinfo=UTC))
    expected = HistoryOut.model_validate(price_history(warehouse, query, NOW)).model_dump(
        mode="json"
    )
    assert HistoryOut.model_validate(body).model_dump(mode="json") == expected
    assert body["series"] and all(p["t"].endswith("Z") for s in body["series"] for p in s["points"])


@pytest.mark.parametrize(
    "field", ["max_price_per_gpu=2", "min_gpu_count=8", "include_unavailable=1"]
)
def test_history_refuses_filters_it_does_not_apply(history_client, field):
    name, value = field.split("=")
    response = history_client.get("/prices/history", params={"gpu": "H100", name: value})
    assert response.status_code == 422 and name in response.text


def test_history_keeps_the_available_minimum_beside_the_listed_one(warehouse, db_path, tmp_path):
    body = orjson.loads(body_with_h100_prices(1.0))
    cheapest = next(r for r in body["offers"] if r["id"] == 90_000)  # $1.00 per GPU-hour
    cheapest["rented"] = True
    path = tmp_path / "vast.json"
    path.write_bytes(orjson.dumps(body))
    run_collection(["vastai"], warehouse, replays={"vastai": path}, now=lambda: T0)
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        [point] = h100_on_demand(client)
        [series] = client.get("/prices/history", params={"gpu": "H100-80GB"}).json()["series"]
    assert point["min"] == pytest.approx(1.0)  # listed, sold out
    assert point["min_available"] == pytest.approx(1.5)  # the cheapest one could rent
    assert (point["offers"], point["available"]) == (3, 2)
    assert "form_factor" in series
