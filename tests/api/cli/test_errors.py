"""Hostile CLI input (issue 17): one readable line and exit 1 or 2, never a traceback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from tests.conftest import FIXTURES

runner = CliRunner()
VAST = FIXTURES / "vastai_bundles.json"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def flat(result) -> str:
    return " ".join(result.output.split())


@pytest.fixture
def collected_db(db_path):
    result = invoke("collect", "--replay", f"vastai={VAST}", "--db", db_path)
    assert result.exit_code == 0, result.output
    return db_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "--gpu", "H100", "--until", "0001-01-01T00:00:00Z"], "out of range"),
        (["history", "--gpu", "H100", "--since", "9999-12-31"], "out of range"),
        (["offers", "--as-of", "0001-01-01T00:00:00Z"], "out of range"),
        (["quote", "--params-b", "1e308", "--method", "lora", "--tokens", "50M"], "100000"),
        (["quote", "--model", "Llama-3.1-8B", "--method", "lora", "--tokens", "1e400"], "tokens"),
        (
            [
                "alerts",
                "add",
                "--url",
                "https://example.com/h",
                "--gpu",
                "H100",
                "--below",
                "1",
                "--cooldown",
                "99999999999999w",
            ],
            "out of range",
        ),
        (["export", "--out", "/proc/x", "--since", "2026-01-01"], "cannot write to /proc/x"),
    ],
)
def test_overflowing_values_are_one_usage_error(collected_db, args, message):
    result = invoke(*args, "--db", collected_db)
    assert result.exit_code in (1, 2) and message in flat(result)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_an_iso_8601_cooldown_is_a_duration(collected_db, monkeypatch):
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")  # adding one sends nothing
    result = invoke(
        "alerts", "add", "--url", "http://127.0.0.1:9/h", "--gpu", "H100", "--below", "1",
        "--cooldown", "PT2H", "--format", "json", "--db", collected_db,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cooldown_seconds"] == 7200


def test_a_workload_alert_file_is_checked_as_the_quote_it_will_run(collected_db, tmp_path):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": "Llama-3.1-8B", "method": "full", "tokens": "50M",
                               "max_hours": "abc"}))  # fmt: skip
    result = invoke(
        "alerts", "add", "--url", "https://example.com/h", "--workload", job, "--below-cost", "5",
        "--db", collected_db,
    )  # fmt: skip
    assert result.exit_code == 2 and "max_hours" in flat(result)


def test_collect_refuses_an_observation_time_in_the_future(db_path):
    result = invoke("collect", "--replay", f"vastai={VAST}", "--at", "2099-01-01T00:00:00Z",
                    "--db", db_path)  # fmt: skip
    assert result.exit_code == 2 and "in the future" in flat(result)
    result = invoke("collect", "--replay", f"vastai={VAST}", "--at", "9999-12-31T23:59:59Z",
                    "--db", db_path)  # fmt: skip
    assert result.exit_code == 2 and "out of range" in flat(result)
    assert not db_path.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["offers"],
        ["history", "--gpu", "H100"],
        ["export", "--out", "out", "--since", "2026-01-01"],
        ["quote", "--model", "Llama-3.1-8B", "--method", "lora", "--tokens", "50M"],
        ["alerts", "list"],
        ["alerts", "deliveries", "alr_x"],
        ["prune"],
    ],
)
def test_a_read_command_with_a_mistyped_db_creates_nothing(tmp_path, args):
    missing = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    result = invoke(*args, "--db", missing)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and f"No database at {missing}" in flat(result)
    assert not (tmp_path / "no").exists()
