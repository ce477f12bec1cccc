"""Every request takes the same way through the app: its middlewares, then the route."""

from __future__ import annotations

import gzip
import json

import pytest
from fastapi.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from api.app import create_app
from pipeline.settings import Settings


class Seen:
    """A pure ASGI middleware that notes each HTTP request's method, path and query."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str, bytes]]) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"], scope["query_string"]))
        await self.app(scope, receive, send)


@pytest.fixture
def market(search_market, db_path):
    return create_app(Settings(db=db_path, scheduler=False), search_market)


def test_a_middleware_added_to_the_app_sees_every_offers_request(market):
    seen: list[tuple[str, str, bytes]] = []
    market.add_middleware(Seen, seen=seen)
    asked = [
        "gpu=H100:8",  # the first: the copy is made
        "gpu=H100:8",  # the same again, answered from memory
        "gpu=A100&limit=5&sort=-reliability",
        "gpu=H1OO",  # refused: unknown GPU
        "colour=red",  # refused: unknown parameter
    ]
    with TestClient(market) as client:
        for query in asked:
            client.get(f"/offers?{query}")
        client.get("/offers?gpu=H100", headers={"Accept": "application/x-ndjson"})
        client.head("/offers?gpu=H100")
    offers = [(method, query.decode()) for method, path, query in seen if path == "/offers"]
    assert offers == [*(("GET", q) for q in asked), ("GET", "gpu=H100"), ("HEAD", "gpu=H100")]


@pytest.mark.parametrize(
    "path", ["/offers?gpu=H100&include_unavailable=true", "/offers?limit=10000", "/gpus"]
)
def test_an_answer_is_gzip_encoded_for_a_client_that_accepts_it(market, path):
    with TestClient(market) as client:
        plain = client.get(path, headers={"Accept-Encoding": "identity"})
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as compressed:
            raw = b"".join(compressed.iter_raw())
    assert plain.status_code == compressed.status_code == 200
    assert "content-encoding" not in plain.headers
    assert compressed.headers["content-encoding"] == "gzip"
    assert len(raw) < len(plain.content)
    assert without_ages(json.loads(gzip.decompress(raw))) == without_ages(plain.json())


def without_ages(page: dict) -> dict:
    """A page without its providers' ages (the clock moves between two requests)."""
    for provider in page.get("providers", ()):
        provider.pop("age_seconds")
    return page


def test_a_refusal_is_gzip_encoded_too_and_says_what_to_fix(market):
    with TestClient(market) as client:
        refused = client.get(f"/offers?{'x' * 2000}=1", headers={"Accept-Encoding": "gzip"})
    assert refused.status_code == 422 and refused.headers["content-encoding"] == "gzip"
    assert "Unknown query parameter" in refused.text
