"""MCP answers an agent can afford: compact by default (a buyer's fields, numbers rounded to
what they mean), the API's full record with `full: true`, and defaults sized for a model's
context, stated in each tool's description."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from api.app import create_app
from api.mcp import OFFERS_LIMIT, TOOLS, in_process_server
from api.mcp_answers import HISTORY_POINTS, OFFER_FIELDS, compact, rounded
from pipeline.base import utc_now
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT
from warehouse import Warehouse

REPLAYS = {
    "vastai": FIXTURES / "vastai_bundles.json",
    "runpod": FIXTURES / "runpod_gpu_types.json",
    "lambda": FIXTURES / "lambda_instance_types.json",
}
DAYS = 3
COMPACT_OFFERS_BYTES = 4_000
COMPACT_HISTORY_BYTES = 8_000
TOO_PRECISE = re.compile(r"\d+\.\d{5,}")
"""A number written with 5 or more decimals: more digits than a price or a share means."""


@pytest.fixture(scope="module")
def market_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three providers' recorded answers, collected once a day for a few days."""
    db = tmp_path_factory.mktemp("compact") / "market.duckdb"
    with Warehouse.open(db) as warehouse:
        for day in range(DAYS):
            at = OBSERVED_AT + timedelta(days=day)
            run_collection(list(REPLAYS), warehouse, replays=REPLAYS, now=lambda at=at: at)
    return db


def _answers(db: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any], Any]:
    """The tool list and the answers to `calls`, and the API's own answers, from one app (its
    clock stopped: a freshness made in another second would differ in its ages)."""
    now = utc_now()
    with Warehouse.open(db) as warehouse:
        app = create_app(Settings(db=db, scheduler=False), warehouse, clock=lambda: now)

        async def ask():
            async with Client(in_process_server(app)) as client:
                listed = await client.list_tools()
                return listed, [await client.call_tool(name, args) for name, args in calls]

        with TestClient(app) as api:
            listed, answers = anyio.run(ask)
            offers = api.get("/offers", params={"gpu": "H100", "limit": OFFERS_LIMIT}).json()
    return listed, answers, offers


def test_h100_offers_at_defaults_are_a_few_kb_rounded_and_full_gives_the_record(
    market_db: Path,
) -> None:
    listed, (small, full, history, models, market), api = _answers(
        market_db,
        [
            ("offers", {"gpu": "H100"}),
            ("offers", {"gpu": "H100", "full": True}),
            ("history", {"gpu": "H100", "since": "2025-12-31", "until": "2026-01-10"}),
            ("models", {}),
            ("market", {"gpu": "H100-80GB"}),
        ],
    )
    assert not small.is_error and small.structured_content["offers"], "the replays have H100s"
    text = small.content[0].text
    assert len(text.encode()) < COMPACT_OFFERS_BYTES, len(text.encode())
    assert len(full.content[0].text.encode()) > 2 * len(text.encode())
    assert not TOO_PRECISE.search(text), TOO_PRECISE.search(text)
    assert TOO_PRECISE.search(full.content[0].text), "the check bites: the full record has some"
    assert json.loads(text) == small.structured_content
    for offer in small.structured_content["offers"]:
        assert set(offer) <= set(OFFER_FIELDS)
        assert {"provider", "gpu", "form_factor", "gpu_count", "pricing", "stale"} <= set(offer)
        assert {"price_per_gpu_hour", "price_per_hour", "available", "observed_at"} <= set(offer)
    providers = {p["provider"] for p in small.structured_content["providers"]}
    assert providers == {o["provider"] for o in small.structured_content["offers"]}
    # the same offers, in the same order, at the same prices to their meaning
    compact_prices = [
        (o["offer_id"], o["price_per_gpu_hour"]) for o in small.structured_content["offers"]
    ]
    assert compact_prices == [
        (o["offer_id"], rounded(o["price_per_gpu_hour"])) for o in api["offers"]
    ]
    # full: the API's answer, unchanged
    assert full.structured_content == api
    assert json.loads(full.content[0].text) == api

    assert not history.is_error and history.structured_content["interval"] == "1d"
    assert history.structured_content["series"], "three days of collections"
    assert len(history.content[0].text.encode()) < COMPACT_HISTORY_BYTES
    assert not TOO_PRECISE.search(history.content[0].text)
    assert not TOO_PRECISE.search(models.content[0].text)
    assert not market.is_error and not TOO_PRECISE.search(market.content[0].text)
    assert {"name", "total_params_b", "context_length"} <= set(
        models.structured_content["models"][0]
    )


def test_each_description_states_its_defaults_and_the_full_argument(market_db: Path) -> None:
    listed, (bad,), _ = _answers(market_db, [("offers", {"gpu": "H100", "full": "yes"})])
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {tool.name for tool in TOOLS}
    for tool in TOOLS:
        listed_tool = tools[tool.name]
        assert "full: true" in listed_tool.description
        assert listed_tool.input_schema["properties"]["full"]["type"] == "boolean"
        for name, value in tool.defaults.items():
            assert f"{name} {value}" in listed_tool.description
            assert listed_tool.input_schema["properties"][name]["default"] == value
    assert "limit 20" in tools["offers"].description
    assert "interval 1d" in tools["history"].description
    assert bad.is_error and "full must be true or false" in bad.content[0].text


def test_rounding_keeps_what_a_number_means() -> None:
    assert rounded(3.1900000000000004) == 3.19
    assert rounded(72.09378491327871) == 72.09
    assert rounded(0.10533333333333333) == 0.1053
    assert rounded(1234.5678) == 1234.57
    assert rounded({"percentile_now": 72.09378491327871}) == {"percentile_now": 72.1}
    assert rounded([1, None, True, 0.0, "x"]) == [1, None, True, 0.0, "x"]


def test_a_compact_history_keeps_the_newest_points_and_says_how_many_it_left_off() -> None:
    points = [{"t": f"day {i}", "median": 1.0 + i / 3, "snapshots": 4} for i in range(50)]
    answer = {"interval": "1d", "series": [{"provider": "vastai", "points": points}]}
    (series,) = compact("history", answer)["series"]
    assert len(series["points"]) == HISTORY_POINTS
    assert series["points"][-1] == {"t": "day 49", "median": 17.33}
    assert series["points_left_off"] == 50 - HISTORY_POINTS
