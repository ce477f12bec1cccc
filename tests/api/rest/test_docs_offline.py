"""`/docs` and `/redoc` load nothing from other hosts: their scripts are served here."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings


@pytest.fixture
def api(warehouse, db_path):
    with TestClient(create_app(Settings(db=db_path, scheduler=False), warehouse)) as client:
        yield client


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_only_local_assets(api, page):
    html = api.get(page).text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)
    assert assets, html
    assert not [a for a in assets if a.startswith(("http:", "https:", "//"))], assets
    assert "cdn" not in html.lower() and "fonts.googleapis" not in html
    scripts = [a for a in assets if a.endswith(".js")]
    for script in scripts:
        response = api.get(script)
        assert response.status_code == 200 and len(response.content) > 100_000, script


def test_the_docs_read_the_openapi_of_this_app(api):
    assert "/openapi.json" in api.get("/docs").text
    assert "POST" in str(api.get("/openapi.json").json()["paths"]["/collections"]).upper()
