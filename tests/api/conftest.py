from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import (
    FIXTURES,
    LOOPBACK_URL,
    OBSERVED_AT,
    build_template,
    fill_from,
    open_copy,
)
from tests.search_market import collect_market
from warehouse import Warehouse


def collect_vastai(warehouse: Warehouse, folder: Path) -> None:
    run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        now=lambda: OBSERVED_AT,
    )


@pytest.fixture(scope="session")
def vastai_template(tmp_path_factory) -> Path:
    """Vast.ai's recorded answer collected at `OBSERVED_AT`, once per session."""
    return build_template(tmp_path_factory.mktemp("vastai"), collect_vastai)


@pytest.fixture
def collected(warehouse, vastai_template):
    """The test's own warehouse (the same object as `warehouse`) holding that collection."""
    return fill_from(warehouse, vastai_template)


@pytest.fixture
def client(collected, db_path):
    with TestClient(
        create_app(Settings(db=db_path, scheduler=False), collected), base_url=LOOPBACK_URL
    ) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def search_market_template(tmp_path_factory) -> Path:
    """The market to search (`tests/search_market.py`), collected once per session."""
    folder = tmp_path_factory.mktemp("search-market")
    path = folder / "gpuprices.duckdb"
    with Warehouse.open(path) as wh:
        collect_market(wh, folder)
    return path


@pytest.fixture
def search_market(search_market_template, db_path) -> Iterator[Warehouse]:
    """The market to search, in a database of the test's own at `db_path`."""
    with open_copy(search_market_template, db_path) as wh:
        yield wh
