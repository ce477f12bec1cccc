"""`GET /` through the app, without a browser: server-rendered HTML that stands on its own."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT, Clock, fill_from, module_template

WORKLOAD = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": "50M", "seq_len": "2048"}


@pytest.fixture
def clock():
    return Clock(OBSERVED_AT + timedelta(minutes=5))


def two_points(warehouse, _folder) -> None:
    """The recorded Vast.ai answer collected at OBSERVED_AT (`collected`), then at an earlier
    point, 3 hours before: a gap between them."""
    for at in (OBSERVED_AT, OBSERVED_AT - timedelta(hours=3)):
        run_collection(
            ["vastai"],
            warehouse,
            replays={"vastai": FIXTURES / "vastai_bundles.json"},
            now=lambda at=at: at,
        )


two_points_template = module_template(two_points)


@pytest.fixture
def collected(warehouse, two_points_template):
    """`two_points`, collected once for the module, in the test's own warehouse."""
    return fill_from(warehouse, two_points_template)


@pytest.fixture
def web(collected, db_path, clock):
    settings = Settings(db=db_path, scheduler=False, providers=["vastai", "lambda"])
    with TestClient(create_app(settings, collected, clock=clock)) as client:
        yield client


def soup(response) -> BeautifulSoup:
    assert response.headers["content-type"].startswith("text/html")
    return BeautifulSoup(response.text, "html.parser")


def offer_rows(page: BeautifulSoup) -> list:
    return page.select("#offers-table tbody tr[data-provider]")


def test_the_page_shows_current_offers_in_a_real_table(web):
    response = web.get("/")
    assert response.status_code == 200
    page = soup(response)
    headers = [th.get_text(" ", strip=True) for th in page.select("#offers-table thead th")]
    assert [h.rstrip("↕▲▼ ") for h in headers] == [
        "GPU", "Provider", "Pricing", "$/GPU-hour", "$/hour", "GPUs", "VRAM (GB)",
        "$/PFLOP-hour", "Reliability", "Region", "Available",
    ]  # fmt: skip
    assert all(th["scope"] == "col" for th in page.select("#offers-table thead th"))
    rows = offer_rows(page)
    assert rows and {row["data-provider"] for row in rows} == {"vastai"}
    prices = [float(row.select_one(".price").text.lstrip("$")) for row in rows]
    assert prices == sorted(prices)


def test_filters_apply_through_the_query_string(web):
    page = soup(web.get("/", params={"gpu": "A100-80GB", "pricing": "on_demand"}))
    rows = offer_rows(page)
    assert rows and {(r["data-gpu"], r["data-pricing"]) for r in rows} == {
        ("A100-80GB", "on_demand")
    }
    assert page.select_one("#gpu option[selected]")["value"] == "A100-80GB"
    assert page.select_one("#pricing option[selected]")["value"] == "on_demand"
    assert page.select_one("#chart")["data-gpu"] == "A100-80GB"


def test_all_offers_sort_by_any_column(web):
    every = web.get("/offers").json()["count"]
    page = soup(web.get("/", params={"view": "all", "sort": "price_per_hour", "order": "desc"}))
    rows = offer_rows(page)
    assert len(rows) == every
    per_hour = [float(r.find_all("td")[3].text.lstrip("$").replace(",", "")) for r in rows]
    assert per_hour == sorted(per_hour, reverse=True)
    sorted_by = page.select_one("#offers-table th[aria-sort]")
    assert sorted_by["aria-sort"] == "descending" and "$/hour" in sorted_by.text


def test_the_chart_breaks_its_lines_where_buckets_are_missing(web):
    page = soup(web.get("/", params={"gpu": "H100-80GB"}))
    paths = [g.select_one("path") for g in page.select("#chart .series")]
    assert paths and all(p is None for p in paths)  # two points three hours apart: no line
    dots = page.select("#chart .series .marker")
    assert len(dots) == 2 * len(paths)
    assert "cheapest" in dots[0].title.text
    spot = page.select("#chart .series.spot .marker")
    assert spot and all(m.name == "rect" for m in spot)  # spot: squares, on-demand: dots
    assert all(m.name == "circle" for m in page.select("#chart .series.on_demand .marker"))


def test_the_page_is_made_for_a_375px_screen(web):
    page = soup(web.get("/"))
    assert page.select_one('meta[name="viewport"]')["content"] == (
        "width=device-width, initial-scale=1"
    )
    controls = page.select("form select, form input:not([type=hidden])")
    assert controls
    for control in controls:
        assert page.select_one(f'label[for="{control["id"]}"]'), control["id"]


def test_the_page_loads_nothing_from_other_hosts(web):
    html = web.get("/").text
    assert not re.search(r"(?:src|href|action)=\"(?:https?:)?//", html)
    assert "http://" not in html and "https://" not in html
    page = BeautifulSoup(html, "html.parser")
    for asset in [*page.select("link[href]"), *page.select("script[src]")]:
        url = asset.get("href") or asset["src"]
        assert url.startswith("/static/")
        assert web.get(url).status_code == 200


def test_the_workload_form_ranks_quotes_on_the_server(web):
    page = soup(web.get("/", params=WORKLOAD))
    costs = [
        float(row.select_one(".price").text.lstrip("$").replace(",", ""))
        for row in page.select("#quotes-table tbody tr")
    ]
    assert len(costs) >= 2 and costs == sorted(costs)
    assert "Llama-3.1-8B" in page.select_one("#quotes-summary").text
    assert page.select_one("#model")["value"] == "Llama-3.1-8B"


def test_a_bad_workload_is_explained_beside_the_form(web):
    response = web.get("/", params={**WORKLOAD, "tokens": "lots"})
    assert response.status_code == 422
    page = soup(response)
    assert "tokens" in page.select_one("#quotes .alert").text
    assert offer_rows(page)  # the rest of the page still renders


def test_an_unknown_gpu_says_what_to_fix(web):
    response = web.get("/", params={"gpu": "H1000"})
    assert response.status_code == 422
    assert "Unknown GPU 'H1000'" in soup(response).select_one("#gpus .alert").text


def test_a_stale_provider_is_flagged(web, clock):
    badge = soup(web.get("/")).select_one('.badge[data-provider="vastai"]')
    assert "fresh" in badge["class"] and "observed 5 min ago" in badge.text
    clock.now = OBSERVED_AT + timedelta(hours=1)
    page = soup(web.get("/"))
    warning = page.select_one("#stale-warning").get_text(" ", strip=True)
    assert "vastai" in warning and "stale after 30 min" in warning
    assert "stale" in page.select_one('.badge[data-provider="vastai"]')["class"]
    assert all(row.select_one(".flag") for row in offer_rows(page))


def test_provider_health_lists_each_provider_with_its_last_error(web, collected):
    assert (
        "not run yet"
        in soup(web.get("/")).select_one('#health-table tr[data-provider="lambda"]').text
    )
    run_collection(["lambda"], collected, env={}, now=lambda: OBSERVED_AT)
    page = soup(web.get("/"))
    health = {row["data-provider"]: row for row in page.select("#health-table tbody tr")}
    assert set(health) == {"vastai", "lambda"}
    assert health["vastai"].select_one(".status").text == "ok"
    assert health["lambda"].select_one(".status").text == "failed"
    assert "LAMBDA_API_KEY is not set" in health["lambda"].select_one(".error-text").text
    assert "its last run failed" in page.select_one("#stale-warning").text


def gpu_view_rows(page: BeautifulSoup) -> list:
    return page.select("#gpu-table tbody tr[data-gpu]")


def _price(value: str) -> float | None:
    return float(value) if value else None


def test_the_first_view_lists_one_row_per_gpu_with_its_cheapest_available_prices(web):
    offers = [o for o in web.get("/offers").json()["offers"] if o["available"]]
    expected: dict[tuple, dict[str, float]] = {}
    for o in offers:
        best = expected.setdefault((o["gpu"] or "", o["form_factor"] or ""), {})
        price = o["price_per_gpu_hour"]
        best[o["pricing"]] = min(best.get(o["pricing"], price), price)
    rows = gpu_view_rows(soup(web.get("/")))
    shown = {
        (r["data-gpu"], r["data-form-factor"]): {
            k: v
            for k, v in (
                ("on_demand", _price(r["data-on-demand"])),
                ("spot", _price(r["data-spot"])),
            )
            if v is not None
        }
        for r in rows
        if r["data-gpu"]
    }
    assert len(shown) == len([r for r in rows if r["data-gpu"]])  # one row per GPU
    assert shown == {k: v for k, v in expected.items() if k[0]}


def test_the_first_view_puts_the_cheapest_gpu_hour_first_and_the_most_memory_on_request(web):
    page = soup(web.get("/"))
    prices = [_price(r["data-on-demand"]) for r in gpu_view_rows(page)]
    known = [p for p in prices if p is not None]
    assert known == sorted(known) and prices[: len(known)] == known  # no on-demand: last
    assert page.select_one("#gpu-sort strong").text == "Cheapest on-demand"
    page = soup(web.get("/", params={"gpu_sort": "vram"}))
    by_vram = [_price(r["data-vram"]) or 0.0 for r in gpu_view_rows(page)]
    assert by_vram == sorted(by_vram, reverse=True) and by_vram[0] >= 80
    assert page.select_one("#gpu-sort strong").text == "Most VRAM"


def test_the_page_leads_with_a_quote_for_the_default_job_then_the_market(web):
    page = soup(web.get("/"))  # the form not sent yet: the default workload is quoted
    order = [s["id"] for s in page.select("main > section")]
    assert order[0] == "quotes"
    assert order.index("gpus") < order.index("history") < order.index("offers")
    assert page.select_one("h1").get_text(strip=True) == "What would a fine-tuning job cost?"
    assert "Llama-3.1-8B" in page.select_one("#quotes-summary").text
    costs = [
        float(r.select_one(".price").text.lstrip("$").replace(",", ""))
        for r in page.select("#quotes-table tbody tr")
    ]
    assert costs and costs == sorted(costs)
    folds = page.select("main details.fold")  # open without scripts; app.js folds them on a phone
    assert {f["id"] for f in folds} >= {"gpus-fold", "history-fold", "offers-fold"}
    assert all(f.has_attr("open") for f in folds)


def test_the_first_view_shows_how_the_cheapest_price_moved_since_yesterday(web, collected):
    run_collection(
        ["vastai"],
        collected,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        now=lambda: OBSERVED_AT - timedelta(hours=24, minutes=10),  # same prices, a day ago
    )
    rows = gpu_view_rows(soup(web.get("/")))
    day = {r.select("td.change")[0].get_text(" ", strip=True) for r in rows if r["data-gpu"]}
    week = {r.select("td.change")[1].get_text(" ", strip=True) for r in rows}
    assert day <= {"+0.0%", "+0.0% spot"} and "+0.0%" in day
    assert week == {"—"}  # no snapshot a week ago


def test_the_chart_ends_each_line_at_the_tables_cheapest_available_offer(web):
    page = soup(web.get("/", params={"gpu": "A100-80GB"}))
    table = {
        (row["data-provider"], row["data-pricing"]): (
            float(row["data-price"]),
            row.select_one(".price").text,
        )
        for row in offer_rows(page)
    }
    legend = {
        (li["data-provider"], li["data-pricing"]): (
            float(li["data-now"]),
            li.select_one(".muted").text.removeprefix("now "),
        )
        for li in page.select(".legend li")
    }
    assert legend and legend == table


def test_each_quote_row_shows_its_own_ranges_and_a_flat_history_says_no_movement(web):
    """Issue 42: no global "±N %" over rows whose own ranges differ; a price that never moved
    is "no movement", never an extreme percentile; the history is the offer's own provider's."""
    page = soup(web.get("/", params=WORKLOAD))
    quotes = web.post("/quotes", json={**WORKLOAD, "top": 10}).json()["quotes"]
    rows = page.select("#quotes-table tbody tr")
    assert rows and len(rows) == len(quotes)
    for row, quote in zip(rows, quotes, strict=True):
        low, high = quote["hours_range"]
        assert f"{low:.1f}–{high:.1f} h" in row.select_one('[data-label="Hours"]').text
        cost = row.select_one(".price-pair")
        assert cost.select_one(".range").text.count("$") == 2
        history = row.select_one(".history").text
        assert "percentile" not in history and "no movement" in history  # one price all along
        assert quote["offer"]["provider"] in history
    assert "±" not in page.select_one("#quotes").text
