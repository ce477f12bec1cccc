from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, LOOPBACK_URL, OBSERVED_AT


@pytest.fixture
def collected(warehouse):
    run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        now=lambda: OBSERVED_AT,
    )
    return warehouse


@pytest.fixture
def client(collected, db_path):
    with TestClient(
        create_app(Settings(db=db_path, scheduler=False), collected), base_url=LOOPBACK_URL
    ) as test_client:
        yield test_client
