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
        "vram_gb": 80,
        "matches": ["A100-80GB"],
    }


def test_resolve_uses_the_reported_vram_to_pick_the_size(client):
    body = client.get("/gpus/resolve", params={"name": "A100 SXM4", "vram_gb": 39.5}).json()
    assert (body["gpu"], body["form_factor"], body["vram_gb"]) == ("A100-40GB", "SXM", 40)
    assert body["matches"] == ["A100-40GB", "A100-80GB"]


def test_resolve_without_vram_leaves_a_name_of_several_sizes_unresolved(client):
    body = client.get("/gpus/resolve", params={"name": "A100 SXM4"}).json()
    assert body["gpu"] is None and body["matches"] == ["A100-40GB", "A100-80GB"]


def test_resolve_rejects_a_vram_that_is_not_a_gpu_size(client):
    response = client.get("/gpus/resolve", params={"name": "A100", "vram_gb": -1})
    assert response.status_code == 422
    assert "vram_gb" in response.text


def test_resolve_of_an_unknown_name_is_422(client):
    assert client.get("/gpus/resolve", params={"name": "RTX 4090 Z"}).status_code == 422


def test_the_catalog_lists_consumer_cards_with_their_precision_and_source(client):
    by_id = {g["id"]: g for g in client.get("/gpus").json()["gpus"]}
    assert by_id["RTX 3090"]["bf16"] is True and by_id["RTX 3090"]["vram_gb"] == 24
    assert by_id["RTX 2080 Ti"]["bf16"] is False
    assert by_id["RTX 2080 Ti"]["bf16_tflops_dense"] is None
    assert by_id["RTX 2080 Ti"]["fp16_tflops_dense"] == 53.8
    assert by_id["RTX 2080 Ti"]["source"].startswith("https://")


def test_health_reports_the_schema_version(client):
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and body["schema_version"] >= 1


def test_openapi_docs_are_served(client):
    assert client.get("/docs").status_code == 200
    assert "/offers" in client.get("/openapi.json").json()["paths"]
