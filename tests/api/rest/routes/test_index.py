"""The price index (methodology v1) from replayed answers at known times, against hand counts."""

from __future__ import annotations

import re
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import orjson
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, fill_from, module_template
from warehouse import Warehouse

DAY1 = datetime(2026, 3, 1, tzinfo=UTC)
H = timedelta(hours=1)
NOW = DAY1 + timedelta(days=1, hours=11)
REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "lambda": FIXTURES / "lambda_instance_types.json",
    "runpod": FIXTURES / "runpod_sweep.json",
    "coreweave": FIXTURES / "coreweave_pricing.html",
}


def vastai_body(*, h100: bool, factor: float = 1.0) -> bytes:
    """The recorded Vast.ai answer, its H100 offers priced × factor, or without any H100."""
    body = orjson.loads(REPLAYS["vastai"].read_bytes())
    offers = []
    for offer in body["offers"]:
        if "H100" in offer["gpu_name"]:
            if not h100:
                continue
            offer = {**offer, "dph_base": offer["dph_base"] * factor}
        offers.append(offer)
    return orjson.dumps({**body, "offers": offers})


def replay(
    warehouse: Warehouse, tmp_path: Path, provider: str, at: datetime, body: bytes | None = None
) -> None:
    path = REPLAYS[provider]
    if body is not None:
        path = tmp_path / f"{provider}-{at:%d%H%M}.json"
        path.write_bytes(body)
    run_collection([provider], warehouse, replays={provider: path}, now=lambda: at)


def build_history(warehouse: Warehouse, tmp_path: Path) -> None:
    """Day 1, 10:00 every provider; 10:30 Vast.ai again, its H100 dearer (the last snapshot of
    the hour counts); 12:00 Vast.ai and RunPod, Lambda fails; 13:00 RunPod, and Vast.ai without
    any H100; nothing at 11:00 nor after 13:00 (gaps). Day 2, 10:00 Vast.ai alone."""
    t10 = DAY1 + 10 * H
    for provider in REPLAYS:
        replay(warehouse, tmp_path, provider, t10)
    replay(warehouse, tmp_path, "vastai", t10 + H / 2, vastai_body(h100=True, factor=1.5))
    replay(warehouse, tmp_path, "vastai", t10 + 2 * H)
    replay(warehouse, tmp_path, "runpod", t10 + 2 * H)
    replay(warehouse, tmp_path, "lambda", t10 + 2 * H, b"<html>maintenance</html>")
    replay(warehouse, tmp_path, "runpod", t10 + 3 * H)
    replay(warehouse, tmp_path, "vastai", t10 + 3 * H, vastai_body(h100=False))
    replay(warehouse, tmp_path, "vastai", t10 + timedelta(days=1))


def by_hand(
    db: Warehouse,
    start: datetime,
    end: datetime,
    gpu: str = "H100-80GB",
    pricing: str = "on_demand",
) -> tuple[float | None, int]:
    """Median over providers of the cheapest available offer in each one's last good run of
    [start, end), from the raw rows."""
    with db.cursor() as cur:
        runs = cur.execute(
            "SELECT provider, run_id, observed_at, status FROM collection_runs"
        ).fetchall()
        offers = cur.execute(
            "SELECT run_id, gpu, pricing, available, price_per_gpu_hour FROM offer_observations"
        ).fetchall()
    last: dict[str, tuple[datetime, str]] = {}
    for provider, run_id, observed_at, status in runs:
        newest = provider not in last or observed_at > last[provider][0]
        if status == "ok" and start <= observed_at < end and newest:
            last[provider] = (observed_at, run_id)
    values = []
    for _, run_id in last.values():
        prices = [
            p for r, g, pr, a, p in offers if r == run_id and g == gpu and pr == pricing and a
        ]
        if prices:
            values.append(min(prices))
    return (statistics.median(values) if values else None), len(values)


history = module_template(build_history)
"""`build_history`'s database, built once for the module."""


@pytest.fixture
def index_client(warehouse, db_path, history):
    fill_from(warehouse, history)
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, warehouse, clock=lambda: NOW)) as client:
        yield client


def get_index(client, **params):
    query = {"gpu": "H100-80GB", "pricing": "on_demand", "since": "2026-03-01", **params}
    response = client.get("/index", params={k: v for k, v in query.items() if v is not None})
    assert response.status_code == 200, response.text
    return response.json()


def test_hourly_index_is_the_median_of_each_providers_cheapest_with_gaps(index_client, warehouse):
    body = get_index(index_client, interval="1h")
    assert body["methodology"] == "v1"
    [series] = body["series"]
    assert (series["gpu"], series["pricing"], series["form_factor"]) == (
        "H100-80GB",
        "on_demand",
        None,
    )
    times = [datetime.fromisoformat(p["t"]) for p in series["points"]]
    assert times == [DAY1 + 10 * H, DAY1 + 12 * H, DAY1 + 13 * H, DAY1 + 34 * H]  # 11:00 a gap
    for point, t in zip(series["points"], times, strict=True):
        value, providers = by_hand(warehouse, t, t + H)
        assert point["value"] == pytest.approx(value)
        assert point["providers"] == providers
    assert [p["providers"] for p in series["points"]] == [4, 2, 1, 1]


def test_last_snapshot_of_the_bucket_counts_not_the_cheapest_of_the_bucket(index_client, warehouse):
    [series] = get_index(index_client, interval="1h")["series"]
    first = series["points"][0]
    explained = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1h", "t": "2026-03-01T10:45:00Z"}
    ).json()
    vast = next(c for c in explained["contributions"] if c["provider"] == "vastai")
    assert vast["snapshot_at"] == "2026-03-01T10:30:00Z"
    assert vast["value"] == pytest.approx(1.9333375 * 1.5)
    assert first["value"] == pytest.approx(statistics.median([2.39, 3.99, 6.155, 1.9333375 * 1.5]))


def test_daily_index_uses_each_providers_last_good_snapshot_of_the_day(index_client, warehouse):
    [series] = get_index(index_client, interval="1d")["series"]
    assert [p["t"] for p in series["points"]] == ["2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"]
    value, providers = by_hand(warehouse, DAY1, DAY1 + timedelta(days=1))
    assert providers == 3  # Vast.ai's last snapshot of day 1 had no H100: left out
    assert series["points"][0]["value"] == pytest.approx(value)


def test_explain_names_each_exclusion_and_reproduces_every_value(index_client):
    for interval in ("1h", "1d"):
        [series] = get_index(index_client, interval=interval)["series"]
        for point in series["points"]:
            body = index_client.get(
                "/index/explain",
                params={
                    "gpu": "H100-80GB",
                    "pricing": "on_demand",
                    "interval": interval,
                    "t": point["t"],
                },
            ).json()
            values = [c["value"] for c in body["contributions"]]
            assert statistics.median(values) == pytest.approx(point["value"])
            assert body["value"] == pytest.approx(point["value"])
            assert all(c["offer_id"] for c in body["contributions"])
    noon = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1h", "t": "2026-03-01T12:00:00Z"}
    ).json()
    assert {e["provider"]: e["reason"] for e in noon["excluded"]} == {
        "lambda": "failed run",
        "coreweave": "no snapshot in bucket",
    }
    one_pm = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1h", "t": "2026-03-01T13:10:00Z"}
    ).json()
    assert {e["provider"]: e["reason"] for e in one_pm["excluded"]} == {
        "vastai": "no available offer",
        "lambda": "no snapshot in bucket",
        "coreweave": "no snapshot in bucket",
    }
    gap = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1h", "t": "2026-03-01T11:00:00Z"}
    ).json()
    assert (gap["value"], gap["providers"], gap["contributions"]) == (None, 0, [])


def test_explain_survives_pruning_of_raw_observations(index_client, warehouse):
    before = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1d", "t": "2026-03-01"}
    ).json()
    with warehouse.transaction() as conn:
        conn.execute("DELETE FROM offer_observations")
    after = index_client.get(
        "/index/explain", params={"gpu": "H100-80GB", "interval": "1d", "t": "2026-03-01"}
    ).json()
    assert after == before


def test_spot_and_on_demand_are_separate_series_never_mixed(index_client, warehouse):
    body = get_index(index_client, interval="1h", pricing=None)
    assert [s["pricing"] for s in body["series"]] == ["on_demand", "spot"]
    spot = body["series"][1]["points"][0]
    assert spot["value"] == pytest.approx(
        by_hand(warehouse, DAY1 + 10 * H, DAY1 + 11 * H, pricing="spot")[0]
    )


def test_form_factor_series_counts_only_that_form_factor(index_client):
    [series] = get_index(index_client, interval="1h", form_factor="PCIe")["series"]
    assert series["form_factor"] == "PCIe"
    assert series["points"] == []  # Lambda's H100 PCIe was listed but not available


def test_replaying_an_older_snapshot_does_not_replace_the_buckets_later_one(
    index_client, warehouse, tmp_path
):
    before = get_index(index_client, interval="1h")
    replay(
        warehouse,
        tmp_path,
        "vastai",
        DAY1 + 10 * H + timedelta(minutes=10),
        vastai_body(h100=True, factor=0.1),
    )
    assert get_index(index_client, interval="1h") == before


def test_index_export_holds_the_same_points(index_client, tmp_path):
    body = get_index(index_client, interval="1h")
    csv = index_client.get(
        "/export/index.csv",
        params={
            "gpu": "H100-80GB",
            "pricing": "on_demand",
            "interval": "1h",
            "since": "2026-03-01",
        },
    )
    assert csv.status_code == 200
    lines = csv.text.strip().splitlines()
    assert lines[0] == "gpu,pricing,form_factor,t,value,providers"
    assert len(lines) - 1 == len(body["series"][0]["points"])
    parquet = index_client.get(
        "/export/index.parquet",
        params={
            "gpu": "H100-80GB",
            "pricing": "on_demand",
            "interval": "1d",
            "since": "2026-03-01",
        },
    )
    (tmp_path / "index.parquet").write_bytes(parquet.content)
    rows = duckdb.sql(f"SELECT t, value FROM '{tmp_path / 'index.parquet'}' ORDER BY t").fetchall()
    [day_series] = get_index(index_client, interval="1d")["series"]
    assert [v for _, v in rows] == pytest.approx([p["value"] for p in day_series["points"]])


def test_metrics_expose_the_latest_hourly_index(index_client, warehouse):
    from prometheus_client.parser import text_string_to_metric_families

    text = index_client.get("/metrics").text
    [family] = [
        f
        for f in text_string_to_metric_families(text)
        if f.name == "gpuprices_index_price_per_gpu_hour_usd"
    ]
    samples = {(s.labels["gpu"], s.labels["pricing"]): s.value for s in family.samples}
    latest = DAY1 + 34 * H
    assert samples[("H100-80GB", "on_demand")] == pytest.approx(
        by_hand(warehouse, latest, latest + H)[0]
    )


@pytest.mark.parametrize(
    ("path", "params", "needle"),
    [
        ("/index", {"gpu": "H100-80GB", "colour": "red"}, "colour"),
        ("/index", {"gpu": "H100-80GB", "interval": "6h"}, "interval"),
        ("/index", {"gpu": "H100-80GB", "region": "US"}, "region"),
        ("/index", {"gpu": "H100-80GB", "since": "2026-03-02", "until": "2026-03-01"}, "before"),
        ("/index/explain", {"gpu": "H100-80GB"}, "t"),
        ("/index/explain", {"gpu": "H100", "t": "2026-03-01"}, "several GPUs"),
        ("/market", {"gpu": "H100-80GB", "days": "0"}, "days"),
        ("/market", {"gpu": "H100-80GB", "below": "cheap"}, "below"),
        ("/market", {"gpu": "H100-80GB", "provider": "vastai"}, "provider"),
        ("/index", {"gpu": "Z9000"}, "Z9000"),
    ],
)
def test_bad_index_and_market_queries_are_problems_that_say_what_to_fix(
    index_client, path, params, needle
):
    response = index_client.get(path, params=params)
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"].startswith("application/problem+json")
    assert needle in response.text


def test_the_page_charts_the_index_and_each_value_is_one_click_from_its_explanation(index_client):
    from bs4 import BeautifulSoup

    page = BeautifulSoup(
        index_client.get("/", params={"gpu": "H100-80GB", "interval": "1h"}).text, "html.parser"
    )
    lines = page.select("#index-chart g[data-index-pricing]")
    assert {g["data-index-pricing"] for g in lines} == {"on_demand", "spot"}
    y_labels = [t.text for t in page.select("#index-chart .grid text.y-label")]
    assert len(y_labels) >= 3 and all(re.fullmatch(r"\$\d+\.\d{2,4}", t) for t in y_labels)
    assert page.select("#index-chart .grid text.x-label")  # a time axis, in UTC
    links = page.select("#index-table a")
    assert links and len(page.select("#index-chart a")) >= len(links)
    for link in links:
        explained = index_client.get(link["href"]).json()
        assert (
            f"${explained['value']:,.2f}" in link.text or f"{explained['value']:.2f}" in link.text
        )
