"""`gpuprices quality` and `gpuprices alerts add --provider-health`."""

from __future__ import annotations

import json

import orjson
from typer.testing import CliRunner

from api.cli.commands import app
from tests.conftest import FIXTURES

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_quality_lists_the_new_gpu_name_and_why_the_provider_is_degraded(db_path, tmp_path):
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    body["offers"][0]["gpu_name"] = "RTX PRO 9000 Rubin"
    drifted = tmp_path / "drifted.json"
    drifted.write_bytes(orjson.dumps(body))
    for replay in (FIXTURES / "vastai_bundles.json", drifted):
        result = invoke("collect", "--replay", f"vastai={replay}", "--db", db_path)
        assert result.exit_code == 0, result.output
    result = invoke("quality", "--db", db_path, "--format", "json")
    assert result.exit_code == 0, result.output
    [vast] = json.loads(result.output)["providers"]
    assert vast["health"] == "degraded"
    assert [u["gpu_raw"] for u in vast["unknown_gpus"]] == ["RTX PRO 9000 Rubin"]
    table = invoke("quality", "--db", db_path)
    assert table.exit_code == 0
    assert "vastai unknown GPU 'RTX PRO 9000 Rubin': 2 offers" in table.output
    assert "vastai degraded: resolved share" in table.output


def test_quality_of_an_unknown_provider_is_one_line_and_exit_1(db_path):
    result = invoke("quality", "--db", db_path, "--provider", "nope")
    assert result.exit_code == 1
    assert "nope" in result.output and "Traceback" not in result.output


def test_quality_with_a_bad_since_is_a_usage_error(db_path):
    result = invoke("quality", "--db", db_path, "--since", "soonish")
    assert result.exit_code == 2 and "--since" in result.output


def test_alerts_add_provider_health_for_one_provider(db_path, monkeypatch):
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")
    result = invoke("alerts", "add", "--url", "http://127.0.0.1:9/hook", "--provider-health",
                    "--provider", "coreweave", "--db", db_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "provider health: coreweave" in result.output
    listed = invoke("alerts", "list", "--db", db_path, "--format", "json")
    [rule] = json.loads(listed.output)["alerts"]
    assert (rule["kind"], rule["providers"]) == ("provider_health", ["coreweave"])
