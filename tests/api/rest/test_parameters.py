"""Every route reads its query string as one FastAPI query parameter model: list parameters take
every value given, unknown names are a 422 naming them, and OpenAPI documents each parameter."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from api.rest.routes.offers import OffersParams
from pipeline.settings import Settings
from warehouse.filters import FILTERS

PATH_VALUES = {"fmt": "csv", "alert_id": "alr_0"}
_WEB_PAGE = ("/", "/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json")


def operations(client) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(method, path with its path parameters filled in, parameters) of each API operation."""
    found = []
    for template, items in client.app.openapi()["paths"].items():
        if template in _WEB_PAGE or template.startswith("/mcp"):
            continue
        path = template
        for name, value in PATH_VALUES.items():
            path = path.replace(f"{{{name}}}", value)
        for method, operation in items.items():
            found.append((method.upper(), path, operation.get("parameters", [])))
    return found


def test_a_list_parameter_takes_repeated_and_comma_separated_values(client):
    assert client.get("/offers?provider=vastai&provider=vastai").status_code == 200
    for query in ("provider=vastai&provider=nosuch", "provider=vastai,nosuch"):
        response = client.get(f"/offers?{query}")
        assert response.status_code == 422 and "nosuch" in response.json()["detail"], query


def test_any_other_parameter_given_twice_takes_the_last_value(client):
    assert client.get("/offers?limit=1&limit=2").json()["count"] == 2


def test_a_misspelt_filter_is_a_422_naming_it_and_the_accepted_names(client):
    body = client.get("/prices/history?gpu=H100&interval=1d&min_vram_gb=80").json()
    assert body["errors"] == [
        {
            "location": "query",
            "field": "min_vram_gb",
            "detail": body["errors"][0]["detail"],
        }
    ]
    detail = body["detail"]
    assert detail.startswith("min_vram_gb: Unknown query parameter 'min_vram_gb'; known: ")
    assert "continent, country, form_factor, gpu, interval" in detail  # history's own names
    assert "providers" not in detail and "provider," in detail  # the API's names: the aliases


def test_a_field_name_behind_an_alias_is_unknown_to_the_api(client):
    body = client.get("/offers?providers=vastai").json()
    assert body["errors"][0]["field"] == "providers"
    assert "Unknown query parameter 'providers'" in body["detail"]


def test_every_route_of_the_api_refuses_an_unknown_query_parameter(collected, db_path):
    app = create_app(Settings(db=db_path, scheduler=False, api_key="k"), collected)
    with TestClient(app, headers={"Authorization": "Bearer k"}) as client:
        answers = {
            (method, path): client.request(method, f"{path}?colour=red")
            for method, path, _ in operations(client)
        }
    assert len(answers) > 25
    for (method, path), response in answers.items():
        assert response.status_code == 422, (method, path, response.status_code)
        assert "Unknown query parameter 'colour'" in response.json()["detail"], (method, path)


def test_a_route_without_parameters_says_it_takes_none(client):
    detail = client.get("/regions?verbose=1").json()["detail"]
    assert detail == "verbose: Unknown query parameter 'verbose'; this route takes none"


def test_openapi_documents_each_field_of_a_query_model_with_its_bounds(client):
    spec = client.app.openapi()["paths"]["/offers"]["get"]["parameters"]
    documented = {p["name"]: p for p in spec}
    fields = {f.alias or name: f for name, f in OffersParams.model_fields.items()}
    assert set(documented) == set(fields)
    assert all(p["in"] == "query" and p["description"] for p in spec)
    for row in FILTERS:
        name = row.alias or row.field
        assert documented[name]["description"] == row.description, name
    vram = documented["min_vram_gb"]["schema"]["anyOf"][0]
    assert vram["minimum"] == 0 and vram["maximum"] == 1024
    assert documented["provider"]["schema"]["maxItems"] == 50  # a list's bound counts its items
    pricing = documented["pricing"]["schema"]["anyOf"][0]  # a schema it refers to, inlined
    assert pricing["enum"] == ["on_demand", "spot"]


def test_a_flood_of_unknown_names_on_a_post_lists_twenty(client):
    query = "&".join(f"p{i}=1" for i in range(1000))
    body = client.post(f"/quotes?{query}", json={}).json()
    assert len([e for e in body["errors"] if e["location"] == "query"]) == 20
