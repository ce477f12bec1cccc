"""The page searches as `/offers` does: its node filters and sorts, bad values said beside them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.conftest import OBSERVED_AT, Clock


@pytest.fixture
def web(search_market, db_path):
    clock = Clock(OBSERVED_AT + timedelta(minutes=5))
    settings = Settings(db=db_path, scheduler=False)
    with TestClient(create_app(settings, search_market, clock=clock)) as c:
        yield c


def shown(web: TestClient, **params: str) -> list[dict[str, str]]:
    """The offers table of the page asked with `params` (every offer, not the cheapest)."""
    response = web.get("/", params={"view": "all", **params})
    assert response.status_code == 200, response.text
    page = BeautifulSoup(response.text, "html.parser")
    heads = page.select("#offers-table thead th")
    headers = [th.get_text(" ", strip=True).rstrip("↕▲▼ ") for th in heads]
    return [
        dict(zip(headers, [c.get_text(" ", strip=True) for c in row.select("th, td")], strict=True))
        for row in page.select("#offers-table tbody tr[data-provider]")
    ]


def test_the_form_has_every_node_filter_and_keeps_what_was_typed(web):
    page = BeautifulSoup(web.get("/", params={"min_vram_gb": "80"}).text, "html.parser")
    form = page.select_one("form.filters")
    names = {i["name"] for i in form.select("input")}
    assert {"gpu_count", "min_gpu_count", "min_vram_gb", "min_total_vram_gb", "nvlink"} <= names
    assert {"max_price_per_hour", "max_price_per_gpu", "min_reliability", "verified"} <= names
    assert {"min_vcpus", "min_ram_gb", "min_disk_gb"} <= names
    assert form.select_one("input[name=min_vram_gb]")["value"] == "80"


@pytest.mark.parametrize("params", [{"gpu": "H100:8"}, {"gpu": "H100", "gpu_count": "8"}])
def test_h100_8_shows_only_eight_gpu_offers(web, params):
    assert {r["GPUs"] for r in shown(web, gpu="H100")} == {"1", "2", "4", "8"}
    assert {r["GPUs"] for r in shown(web, **params)} == {"8"}


def test_node_filters_narrow_the_table(web):
    rows = shown(web, gpu="H100", min_gpu_count="2", nvlink="1", min_reliability="0.99")
    assert rows and {r["Provider"] for r in rows} == {"vastai"}  # the one with a reliability
    assert {r["GPUs"] for r in rows} == {"2", "4", "8"}


def test_sort_minus_field_is_descending_with_unknown_values_last(web):
    rows = shown(web, gpu="H100", sort="-reliability")
    known = [r["Reliability"] for r in rows if r["Reliability"] != "—"]
    assert known and known == sorted(known, reverse=True)
    assert [r["Reliability"] for r in rows[len(known) :]] == ["—"] * (len(rows) - len(known))


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"min_reliability": "2"}, "min_reliability"),
        ({"gpu": "H100:x"}, "NAME:COUNT"),
        ({"min_vram_gb": "lots"}, "min_vram_gb"),
    ],
)
def test_a_bad_node_filter_is_422_with_the_reason_beside_the_filters(web, params, says):
    response = web.get("/", params=params)
    assert response.status_code == 422
    alert = BeautifulSoup(response.text, "html.parser").select_one("#gpus .alert.error")
    assert alert is not None and says in alert.get_text()
