"""Problem details that say what happened without the server's inner words (paths, hosts)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from warehouse import DatabaseLockedError, WarehouseError


@pytest.mark.parametrize("error", [WarehouseError, DatabaseLockedError])
def test_a_database_failure_is_a_503_that_names_no_path(warehouse, db_path, caplog, error):
    app = create_app(Settings(db=db_path, scheduler=False), warehouse)

    @app.get("/fails")
    def fails() -> None:  # what the driver's translated error says, path included
        raise error("Database /srv/private-place/prices.duckdb: Conversion Error: out of range")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/fails")
    assert response.status_code == 503, response.text
    assert "private-place" not in response.text and "Conversion" not in response.text
    assert "private-place" in caplog.text  # the log keeps what the answer leaves out


def test_a_detail_never_repeats_a_huge_input_whole(warehouse, db_path):
    from pipeline.errors import PipelineError

    app = create_app(Settings(db=db_path, scheduler=False), warehouse)

    @app.get("/echoes")
    def echoes() -> None:
        raise PipelineError(f"unknown name '{'x' * 60_000}'")

    with TestClient(app) as client:
        response = client.get("/echoes")
    assert response.status_code == 422 and len(response.json()["detail"]) <= 1000
