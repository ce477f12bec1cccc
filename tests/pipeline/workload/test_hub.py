"""Any Hugging Face id: its config.json read from `HF_ENDPOINT` (a respx mock on loopback here,
replaying recorded bodies from `tests/fixtures/hf_configs/`), kept on disk, quoted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from pipeline.errors import WorkloadError
from pipeline.workload.hub import DEFAULT_ENDPOINT, ModelHub, is_hub_id, resolve_model
from pipeline.workload.model import Workload
from tests.conftest import FIXTURES

ENDPOINT = "http://127.0.0.1:9/hub"
TINY = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
TINY_URL = f"{ENDPOINT}/{TINY}/resolve/main/config.json"
TINY_BODY = (
    FIXTURES / "hf_configs" / "TinyLlama--TinyLlama-1.1B-Chat-v1.0.config.json"
).read_bytes()


@pytest.fixture
def hf() -> Iterator[respx.MockRouter]:
    """The Hub at `ENDPOINT`: every request must match a recorded route."""
    with respx.mock(assert_all_mocked=True) as router:
        yield router


def hub(tmp_path: Path, token: str | None = None) -> ModelHub:
    return ModelHub.from_env(
        tmp_path / "hf_configs", {"HF_ENDPOINT": ENDPOINT, "HF_TOKEN": token or ""}
    )


def test_an_id_outside_the_catalog_is_read_from_its_config_json(
    hf: respx.MockRouter, tmp_path: Path
) -> None:
    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    arch = resolve_model(TINY, hub(tmp_path))
    assert (arch.name, arch.layers, arch.hidden, arch.kv_heads) == (TINY, 22, 2048, 4)
    assert arch.params_b == pytest.approx(1.10, abs=0.01)  # TinyLlama's card: 1.1B
    assert arch.context_length == 2048 and arch.source == TINY_URL
    assert route.call_count == 1
    assert (
        tmp_path / "hf_configs" / "TinyLlama" / "TinyLlama-1.1B-Chat-v1.0" / "config.json"
    ).read_bytes() == TINY_BODY


def test_a_kept_config_is_not_fetched_again_even_by_another_process(
    hf: respx.MockRouter, tmp_path: Path
) -> None:
    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    first = resolve_model(TINY, hub(tmp_path))
    again = resolve_model(TINY, hub(tmp_path))  # a new ModelHub: what a second process builds
    assert again.params == first.params and route.call_count == 1


def test_hf_token_is_sent_as_a_bearer_token_and_never_shown(
    hf: respx.MockRouter, tmp_path: Path
) -> None:
    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    models = hub(tmp_path, token="hf_secret123")
    resolve_model(TINY, models)
    assert route.calls.last.request.headers["Authorization"] == "Bearer hf_secret123"
    assert "hf_secret123" not in repr(models)


def test_no_token_sends_no_authorization(hf: respx.MockRouter, tmp_path: Path) -> None:
    route = hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    resolve_model(TINY, hub(tmp_path))
    assert "Authorization" not in route.calls.last.request.headers


def test_a_catalog_model_by_hub_id_makes_no_request(hf: respx.MockRouter, tmp_path: Path) -> None:
    assert resolve_model("openai/gpt-oss-20b", hub(tmp_path)).name == "gpt-oss-20b"
    assert not hf.calls


def test_a_missing_id_is_one_line_naming_it(hf: respx.MockRouter, tmp_path: Path) -> None:
    hf.get(f"{ENDPOINT}/nobody/no-such-model/resolve/main/config.json").mock(
        return_value=httpx.Response(
            404, headers={"X-Error-Code": "RepoNotFound"}, json={"error": "Repository not found"}
        )
    )
    with pytest.raises(WorkloadError) as info:
        resolve_model("nobody/no-such-model", hub(tmp_path))
    assert info.value.field == "model"
    assert "no model 'nobody/no-such-model' on the Hugging Face Hub" in info.value.detail
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_gated_id_is_one_line_naming_hf_token(
    hf: respx.MockRouter, tmp_path: Path, status: int
) -> None:
    hf.get(f"{ENDPOINT}/meta-llama/Llama-Guard-3-1B/resolve/main/config.json").mock(
        return_value=httpx.Response(
            status,
            headers={"X-Error-Code": "GatedRepo"},
            json={"error": "Access to model meta-llama/Llama-Guard-3-1B is restricted."},
        )
    )
    with pytest.raises(WorkloadError) as info:
        resolve_model("meta-llama/Llama-Guard-3-1B", hub(tmp_path))
    assert "gated or private" in info.value.detail and "set HF_TOKEN" in info.value.detail
    assert "\n" not in str(info.value)
    assert not (tmp_path / "hf_configs").exists()  # nothing kept


def test_no_network_is_one_line_naming_hf_config(hf: respx.MockRouter, tmp_path: Path) -> None:
    hf.get(TINY_URL).mock(side_effect=httpx.ConnectError("no route to host"))
    with pytest.raises(WorkloadError) as info:
        resolve_model(TINY, hub(tmp_path))
    assert "cannot reach the Hugging Face Hub" in info.value.detail
    assert "--hf-config" in info.value.detail and "\n" not in str(info.value)


def test_a_body_that_is_not_a_config_is_refused_and_not_kept(
    hf: respx.MockRouter, tmp_path: Path
) -> None:
    hf.get(TINY_URL).mock(return_value=httpx.Response(200, text="<html>sign in</html>"))
    with pytest.raises(WorkloadError, match="not a JSON object"):
        resolve_model(TINY, hub(tmp_path))
    assert not (tmp_path / "hf_configs").exists()


def test_an_unknown_name_that_is_no_id_keeps_the_catalogs_answer(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="closest: .*Llama-3.1-8B"):
        resolve_model("Llama-3.1-7B", hub(tmp_path))


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        (TINY, True),
        ("owner/name", True),
        ("../etc", False),
        ("owner/..", False),
        ("owner/a..b", False),
        ("owner/-x", False),
        ("a/b/c", False),
        ("Llama-3.1-8B", False),
    ],
)
def test_only_owner_name_ids_are_fetched(name: str, ok: bool) -> None:
    assert is_hub_id(name) is ok


def test_the_endpoint_defaults_to_the_hub_as_huggingface_hub_does(tmp_path: Path) -> None:
    models = ModelHub.from_env(tmp_path, {})
    assert models.url(TINY) == f"{DEFAULT_ENDPOINT}/{TINY}/resolve/main/config.json"


def test_a_dense_model_fetched_by_id_builds_a_workload(
    hf: respx.MockRouter, tmp_path: Path
) -> None:
    hf.get(TINY_URL).mock(return_value=httpx.Response(200, content=TINY_BODY))
    job = Workload.build(model=TINY, method="lora", tokens="50M", hub=hub(tmp_path))
    assert job.arch.name == TINY and job.tokens == 50_000_000
