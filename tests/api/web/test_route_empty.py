"""The page with nothing collected yet says what happened and what to do."""

from __future__ import annotations

import httpx
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import OBSERVED_AT


def _offline(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)


def test_an_offline_first_run_explains_itself(warehouse, db_path):
    run_collection(
        ["vastai", "lambda"],
        warehouse,
        env={},
        now=lambda: OBSERVED_AT,
        client_factory=lambda: httpx.Client(transport=httpx.MockTransport(_offline)),
    )
    settings = Settings(db=db_path, scheduler=False, providers=["vastai", "lambda"])
    with TestClient(create_app(settings, warehouse, clock=lambda: OBSERVED_AT)) as web:
        page = BeautifulSoup(web.get("/").text, "html.parser")
    notice = " ".join(page.select_one("#no-data").get_text(" ").split())
    assert "No offers yet" in notice
    assert "no network: could not resolve console.vast.ai" in notice
    assert "LAMBDA_API_KEY is not set" in notice and "make demo" in notice
    assert "still listed" not in page.get_text()
    assert "No offers yet" in page.select_one("#gpus .empty").text
    assert "No offers yet" in page.select_one("#offers .empty").text
    assert "No GPU to chart: no offers yet." in " ".join(page.get_text().split())
    assert page.select_one("#demo-banner") is None
