"""Every GET route of the OpenAPI schema, each parameter given hostile values: never a 5xx.

The bad values are those a second adversarial round found 500s (and one 503) with: GPU
shorthands the query models refuse only after the route's own model passed them, integers past
64 bits, NUL bytes, 60 KB strings.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings

BAD_VALUES = (
    "H100:0",
    "H100:",
    ":8",
    "H100:8:8",
    "9223372036854775808",
    "-9223372036854775809",
    "-1",
    "0",
    "1e309",
    "nan",
    "\x00",
    "a\x00b",
    "x" * 60_000,
)
PATH_VALUES = {"fmt": ("csv", "parquet"), "alert_id": ("alr_0", "%00", "x" * 60_000)}


@pytest.fixture(scope="module")
def walker(tmp_path_factory) -> Any:
    from pipeline.collection.collect import run_collection
    from tests.conftest import FIXTURES, OBSERVED_AT
    from warehouse import Warehouse

    db = tmp_path_factory.mktemp("walk") / "walk.duckdb"
    with Warehouse.open(db) as warehouse:
        run_collection(
            ["vastai"],
            warehouse,
            replays={"vastai": FIXTURES / "vastai_bundles.json"},
            now=lambda: OBSERVED_AT,
        )
        app = create_app(Settings(db=db, scheduler=False), warehouse)
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


def get_routes(client: TestClient) -> list[tuple[str, list[dict[str, Any]]]]:
    schema = client.app.openapi()  # type: ignore[attr-defined]
    return [
        (path, ops["get"].get("parameters", []))
        for path, ops in schema["paths"].items()
        if "get" in ops
    ]


def paths_of(template: str, parameters: list[dict[str, Any]]) -> list[str]:
    paths = [template]
    for parameter in parameters:
        if parameter["in"] == "path":
            name = parameter["name"]
            paths = [p.replace(f"{{{name}}}", v) for p in paths for v in PATH_VALUES[name]]
    return paths


def test_the_walk_covers_the_routes_the_findings_named(walker):
    walked = {path for path, _ in get_routes(walker)}
    named = {"/prices/history", "/index", "/index/explain", "/market", "/offers"}
    assert named <= walked and "/export/index.{fmt}" in walked


def test_no_get_route_answers_a_5xx_to_a_hostile_query_value(walker):
    failures = []
    for template, parameters in get_routes(walker):
        for path in paths_of(template, parameters):
            for parameter in parameters:
                if parameter["in"] != "query":
                    continue
                for value in BAD_VALUES:
                    response = walker.get(path, params={parameter["name"]: value})
                    if response.status_code >= 500:
                        failures.append((path[:60], parameter["name"], value[:20], response.text))
    assert not failures, failures[:10]


def test_no_get_route_answers_a_5xx_to_a_hostile_path_value(walker):
    failures = []
    for template, parameters in get_routes(walker):
        for path in paths_of(template, parameters):
            response = walker.get(path)
            if response.status_code >= 500:
                failures.append((path[:60], response.text))
    assert not failures, failures


@pytest.mark.parametrize("path", ["/prices/history", "/export/history.csv", "/index", "/market"])
@pytest.mark.parametrize("gpu", ["H100:0", "H100:", ":8"])
def test_a_bad_gpu_shorthand_is_a_422_problem_naming_the_gpu(walker, path, gpu):
    response = walker.get(path, params={"gpu": gpu})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert "gpu=" in response.json()["detail"]


def test_a_limit_past_64_bits_is_a_422_without_a_path(walker):
    response = walker.get("/export/offers.csv", params={"limit": "9223372036854775808"})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "limit" in detail and ".duckdb" not in detail and "/" not in detail.split(":")[0]
