"""`POST /quotes`, `POST /quotes/task` and the page with a Hugging Face id, the Hub a respx mock
at `HF_ENDPOINT` replaying a recorded config.json."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
import respx
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.conftest import FIXTURES

ENDPOINT = "http://127.0.0.1:9/hub"
TINY = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
TINY_URL = f"{ENDPOINT}/{TINY}/resolve/main/config.json"
TINY_BODY = (
    FIXTURES / "hf_configs" / "TinyLlama--TinyLlama-1.1B-Chat-v1.0.config.json"
).read_bytes()
TOKEN = "hf_test_token_never_shown"
JOB = {"model": TINY, "method": "lora", "tokens": "50M"}


@pytest.fixture
def hf(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    monkeypatch.setenv("HF_ENDPOINT", ENDPOINT)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


@pytest.fixture
def api(hf, collected, db_path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db=db_path, scheduler=False), collected)) as client:
        yield client


def test_an_id_resolves_and_quotes_once_fetched(api, hf, db_path) -> None:
    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    first = api.post("/quotes", json=JOB)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["workload"]["model"] == TINY and body["count"] >= 1
    assert body["workload"]["architecture"]["source"] == TINY_URL
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert (db_path.parent / "hf_configs" / "TinyLlama" / "TinyLlama-1.1B-Chat-v1.0").is_dir()
    again = api.post("/quotes", json=JOB)
    task = api.post("/quotes/task", json={**JOB, "launcher": "skypilot"})
    best = api.get("/offers/best", params=JOB)
    assert again.json()["quotes"] == body["quotes"]
    assert task.status_code == 200 and best.status_code == 200
    assert route.call_count == 1  # kept: the other quotes asked nothing
    assert TOKEN not in first.text + task.text


def test_a_missing_id_is_a_422_naming_it(api, hf) -> None:
    hf.get(f"{ENDPOINT}/nobody/nothing/resolve/main/config.json").mock(
        return_value=httpx.Response(404, headers={"X-Error-Code": "RepoNotFound"})
    )
    response = api.post("/quotes", json={**JOB, "model": "nobody/nothing"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("model: no model 'nobody/nothing'")


def test_a_gated_id_is_a_422_naming_hf_token_and_never_the_token(api, hf) -> None:
    hf.get(f"{ENDPOINT}/meta-llama/Llama-Guard-3-1B/resolve/main/config.json").mock(
        return_value=httpx.Response(401, headers={"X-Error-Code": "GatedRepo"})
    )
    response = api.post("/quotes", json={**JOB, "model": "meta-llama/Llama-Guard-3-1B"})
    assert response.status_code == 422
    assert "HF_TOKEN" in response.json()["detail"] and TOKEN not in response.text


def test_the_page_quotes_an_id_typed_in_the_form(api, hf) -> None:
    hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    page = api.get("/", params={**JOB, "seq_len": "2048"})
    assert page.status_code == 200, page.text[:500]
    assert f'value="{TINY}"' in page.text and TINY in page.text.split('id="quotes-summary"')[1]


def test_the_mcp_quote_tool_takes_a_hugging_face_id(api, hf) -> None:
    """The MCP `quote` tool is `POST /quotes`: the same resolver, the same kept config."""
    from mcp import Client

    from api.mcp import in_process_server

    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))

    async def ask():
        async with Client(in_process_server(api.app)) as client:
            return [await client.call_tool("quote", JOB) for _ in range(2)]

    first, second = anyio.run(ask)
    assert not first.is_error and first.structured_content["workload"]["model"] == TINY
    assert second.structured_content["quotes"] == first.structured_content["quotes"]
    assert route.call_count == 1
