from __future__ import annotations


def test_the_catalog_lists_ids_with_specs(client):
    body = client.get("/gpus").json()
    by_id = {g["id"]: g for g in body["gpus"]}
    assert by_id["A100-80GB"]["vram_gb"] == 80
    assert set(by_id["A100-80GB"]["form_factors"]) == {"SXM", "PCIe"}
    assert by_id["H100-80GB"]["bf16_tflops_dense"] == 989


def test_resolve_explains_what_a_spelling_means(client):
    body = client.get("/gpus/resolve", params={"name": "NVIDIA A100-SXM4-80GB"}).json()
    assert body == {
        "name": "NVIDIA A100-SXM4-80GB",
        "gpu": "A100-80GB",
        "form_factor": "SXM",
        "matches": ["A100-80GB"],
    }


def test_resolve_of_an_unknown_name_is_422(client):
    assert client.get("/gpus/resolve", params={"name": "RTX 4090D"}).status_code == 422


def test_health_reports_the_schema_version(client):
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["schema_version"] >= 1


def test_openapi_docs_are_served(client):
    assert client.get("/docs").status_code == 200
    assert "/offers" in client.get("/openapi.json").json()["paths"]
