"""The MCP tools, asked with the official SDK's client over stdio (`gpuprices mcp`) and over
streamable HTTP (`serve`'s `/mcp`): they list the five tools with the API's input schemas, answer
as the API answers (its full record with `full: true`, compact otherwise), and turn a bad argument
into a tool error with the API's reason."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from api.app import create_app
from api.cli.commands import app as cli
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT, free_port
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"offers", "quote", "models", "history", "market"}
JOB = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": "50M"}


@pytest.fixture
def market_db(tmp_path: Path) -> Path:
    """A database with one recorded Vast.ai and one RunPod answer in it, closed again."""
    db = tmp_path / "market.duckdb"
    with Warehouse.open(db) as warehouse:
        run_collection(
            ["vastai", "runpod"],
            warehouse,
            replays={
                "vastai": FIXTURES / "vastai_bundles.json",
                "runpod": FIXTURES / "runpod_gpu_types.json",
            },
            now=lambda: OBSERVED_AT,
        )
    return db


@pytest.fixture
def served(market_db: Path) -> Iterator[str]:
    """`serve`'s app on a real uvicorn on 127.0.0.1; yields its base URL."""
    port = free_port()
    settings = Settings(db=market_db, scheduler=False, port=port)
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _stdio(db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "api", "mcp", "--db", str(db)], cwd=str(ROOT)
    )


async def _ask(server, calls):
    async with Client(server) as client:
        listed = await client.list_tools()
        answers = [await client.call_tool(name, arguments) for name, arguments in calls]
    return listed, answers


def _check_tools(listed, openapi: dict) -> None:
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    offers_params = {p["name"] for p in openapi["paths"]["/offers"]["get"]["parameters"]}
    assert set(tools["offers"].input_schema["properties"]) == offers_params | {"full"}
    assert {"gpu", "max_price_per_gpu", "min_disk_gb"} <= offers_params
    assert tools["history"].input_schema["required"] == ["gpu"]
    assert {"model", "method", "tokens"} <= set(tools["quote"].input_schema["properties"])
    assert all(tool.description and tool.annotations.read_only_hint for tool in tools.values())


def test_stdio_tools_answer_as_the_api_and_the_cli_do(market_db: Path, tmp_path: Path) -> None:
    quote = CliRunner().invoke(
        cli, ["quote", "--db", str(market_db), *_job_args(), "--format", "json"]
    )
    assert quote.exit_code == 0, quote.output
    with Warehouse.open(market_db) as warehouse:
        app = create_app(Settings(db=market_db, scheduler=False), warehouse)
        from fastapi.testclient import TestClient

        with TestClient(app) as client:
            expected_offers = client.get("/offers", params={"gpu": "A100-80GB", "limit": 20}).json()
            openapi = client.get("/openapi.json").json()
            refused = client.get("/offers", params={"gpu": "H100:0"})
    assert refused.status_code == 422

    listed, (offers, ranked, bad, again) = anyio.run(
        _ask,
        _stdio(market_db),
        [
            ("offers", {"gpu": "A100-80GB", "full": True}),
            ("quote", JOB),
            ("offers", {"gpu": "H100:0"}),
            ("offers", {"gpu": "A100-80GB", "limit": 1}),
        ],
    )
    _check_tools(listed, openapi)
    assert not offers.is_error
    assert offers.structured_content["offers"] == expected_offers["offers"]
    assert offers.structured_content["offers"], "the replay has A100-80GB offers"
    assert all("stale" in offer for offer in offers.structured_content["offers"])
    assert [q["offer"]["offer_id"] for q in ranked.structured_content["quotes"]] == [
        q["offer"]["offer_id"] for q in json.loads(quote.stdout)["quotes"]
    ]
    assert bad.is_error and bad.content[0].text == refused.json()["detail"]
    assert not again.is_error and len(again.structured_content["offers"]) == 1


def _job_args() -> list[str]:
    return ["--model", JOB["model"], "--method", JOB["method"], "--tokens", JOB["tokens"]]


def test_http_tools_at_slash_mcp_answer_as_the_api(served: str) -> None:
    with httpx.Client(base_url=served) as http:
        expected = http.get("/offers", params={"gpu": "A100-80GB", "limit": 20}).json()
        history = http.get("/prices/history", params={"gpu": "A100-80GB"}).json()
        catalog = http.get("/models").json()
        openapi = http.get("/openapi.json").json()

    listed, (offers, past, bad, unknown, models) = anyio.run(
        _ask,
        f"{served}/mcp",
        [
            ("offers", {"gpu": "A100-80GB", "full": True}),
            ("history", {"gpu": "A100-80GB", "interval": "1h", "full": True}),
            ("history", {"gpu": "A100-80GB", "interval": "3h"}),
            ("nonexistent", {}),
            ("models", {}),
        ],
    )
    _check_tools(listed, openapi)
    assert offers.structured_content["offers"] == expected["offers"]
    assert [m["name"] for m in models.structured_content["models"]] == [
        m["name"] for m in catalog["models"]
    ]
    assert {"Qwen3-30B-A3B", "gpt-oss-120b"} <= {m["name"] for m in catalog["models"]}
    assert past.structured_content["series"] == history["series"]
    assert bad.is_error and "interval" in bad.content[0].text
    assert unknown.is_error


def test_the_http_transport_streams_uncompressed_even_when_gzip_is_accepted(served: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Accept-Encoding": "gzip",
        "Content-Type": "application/json",
    }
    with httpx.Client(base_url=served) as http:
        response = http.post("/mcp", json=initialize, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "content-encoding" not in response.headers
