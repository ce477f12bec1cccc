"""`GET /` reads its offers from the in-memory answer `/offers` gives, never every offer."""

from __future__ import annotations

from datetime import timedelta
from unittest.mock import patch

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.api.web.test_route import offer_rows, soup
from tests.conftest import OBSERVED_AT, Clock
from warehouse.current import CurrentOffers


@pytest.fixture
def client(collected, db_path):
    settings = Settings(db=db_path, scheduler=False, providers=["vastai", "lambda"])
    clock = Clock(OBSERVED_AT + timedelta(minutes=5))
    with TestClient(create_app(settings, collected, clock=clock)) as client:
        yield client


def test_page_views_read_no_offers_from_the_warehouse_once_the_copy_is_made(client):
    assert client.get("/").status_code == 200  # the copy in force is made (one read)
    with patch.object(CurrentOffers, "load", wraps=CurrentOffers.load) as copies_made:
        for params in (
            {"gpu": "H100"},
            {"view": "all", "include_unavailable": "1", "sort": "region"},
            {"provider": "vastai", "max_price": "3", "view": "all", "sort": "gpu"},
        ):
            assert client.get("/", params=params).status_code == 200
    assert copies_made.call_count == 0


def test_the_all_view_lists_a_page_of_offers_in_the_order_asked(client):
    every = client.get("/offers", params={"sort": "-vram_gb", "limit": 3}).json()
    with patch("api.web.page.OFFERS_SHOWN", 3):
        page = soup(client.get("/", params={"view": "all", "sort": "vram_gb", "order": "desc"}))
    rows = offer_rows(page)
    assert len(rows) == 3
    shown = [float(r.select_one('[data-label="VRAM"]').get_text()) for r in rows]
    assert shown == [round(o["vram_gb"]) for o in every["offers"]]
    total = client.get("/offers").json()["count"]
    assert f"The first 3 of {total} offers" in page.select_one("#offers-summary").get_text()


def test_the_cheapest_view_counts_every_offer_of_each_group(client):
    offers = client.get("/offers", params={"include_unavailable": "true"}).json()["offers"]
    page = soup(client.get("/", params={"include_unavailable": "1"}))
    rows = offer_rows(page)
    groups = {
        (o["gpu"] or o["gpu_raw"], o["form_factor"], o["provider"], o["pricing"]) for o in offers
    }
    assert len(rows) == len(groups)
    summary = page.select_one("#offers-summary").get_text()
    assert f"{len(groups)} of {len(offers)} offers" in summary


def test_the_lead_quote_is_ranked_once_per_snapshot_workload_and_filters(client, collected):
    import pipeline.workload.quotes as quotes
    from pipeline.collection.collect import run_collection
    from tests.conftest import FIXTURES

    with patch.object(quotes, "rank_offers", wraps=quotes.rank_offers) as ranked:
        first = soup(client.get("/")).select_one("#quotes-summary").get_text()
        for params in ({"interval": "1d"}, {"gpu_sort": "vram"}, {"view": "all"}):
            page = soup(client.get("/", params=params))  # the same job over the same offers
            assert page.select_one("#quotes-summary").get_text() == first
        assert ranked.call_count == 1
        client.get("/", params={"pricing": "on_demand"})  # other filters: ranked anew
        client.get("/", params={"model": "Qwen2.5-7B", "method": "lora", "tokens": "10M"})
        assert ranked.call_count == 3
        run_collection(  # a new snapshot in force: the default job is ranked again over it
            ["vastai"],
            collected,
            replays={"vastai": FIXTURES / "vastai_bundles.json"},
            now=lambda: OBSERVED_AT + timedelta(minutes=1),
        )
        client.get("/")
        assert ranked.call_count == 4
