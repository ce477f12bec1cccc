from __future__ import annotations

import csv
import io
import json

import httpx
import pytest
import respx
from typer.testing import CliRunner

from api.cli.commands import app
from scrapers import lambdalabs
from tests.conftest import FIXTURES

runner = CliRunner()
VAST = FIXTURES / "vastai_bundles.json"


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def collected_db(db_path):
    result = invoke(
        "collect", "--replay", f"vastai={VAST}", "--at", "2026-01-01T00:00:00Z", "--db", db_path
    )
    assert result.exit_code == 0, result.output
    return db_path


def test_collect_with_replay_then_offers_as_json_lists_only_that_gpu(collected_db):
    result = invoke("offers", "--gpu", "A100-80GB", "--format", "json", "--db", collected_db)
    assert result.exit_code == 0
    offers = json.loads(result.stdout)["offers"]
    assert offers and all(o["gpu"] == "A100-80GB" for o in offers)
    assert [o["price_per_gpu_hour"] for o in offers] == sorted(
        o["price_per_gpu_hour"] for o in offers
    )
    assert all(o["observed_at"] == "2026-01-01T00:00:00Z" for o in offers)
    assert all(
        abs(o["price_per_gpu_hour"] * o["gpu_count"] - o["price_per_hour"]) < 0.005 for o in offers
    )


def test_collect_prints_a_summary_table(db_path):
    result = invoke("collect", "--replay", f"vastai={VAST}", "--db", db_path)
    assert result.exit_code == 0
    assert "vastai" in result.output and "ok" in result.output and "13" in result.output


def test_collect_with_a_failing_provider_exits_1_and_says_why(db_path, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    result = invoke("collect", "--replay", f"vastai={bad}", "--db", db_path)
    assert result.exit_code == 1
    assert "failed" in result.output and "not JSON" in result.output


def test_collect_reports_each_rejected_record(db_path, tmp_path):
    body = json.loads(VAST.read_text())
    body["offers"][0]["num_gpus"] = 0
    path = tmp_path / "one-bad.json"
    path.write_text(json.dumps(body))
    result = invoke("collect", "--replay", f"vastai={path}", "--db", db_path)
    assert result.exit_code == 0
    assert "rejected vastai record 24581137" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replay", "vastai"], "is not NAME=FILE"),
        (["--replay", "vastai=/no/such/file"], "no such file"),
        (["--replay", f"nosuchcloud={VAST}"], "unknown provider 'nosuchcloud'"),
        (["--at", "yesterday", "--replay", f"vastai={VAST}"], "is not ISO 8601"),
        (["--at", "2026-01-01T00:00:00", "--replay", f"vastai={VAST}"], "no timezone"),
    ],
)
def test_collect_usage_errors_exit_2_with_a_readable_message(db_path, args, message):
    result = invoke("collect", *args, "--db", db_path)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_offers_csv_has_a_header_and_one_row_per_offer(collected_db):
    result = invoke("offers", "--gpu", "A100", "--format", "csv", "--db", collected_db)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2 and rows[0]["gpu"] == "A100-80GB"


def test_offers_table_shows_the_offers(collected_db):
    result = invoke("offers", "--gpu", "H100", "--db", collected_db)
    assert result.exit_code == 0 and "H100-80GB" in result.output


def test_an_unknown_gpu_is_one_red_line_and_exit_1(collected_db):
    result = invoke("offers", "--gpu", "NOT-A-GPU", "--db", collected_db)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        next(line for line in result.output.splitlines() if "Unknown GPU" in line)
    ]
    assert "Traceback" not in result.output


def test_gpus_lists_the_catalog_as_json():
    result = invoke("gpus", "--format", "json")
    ids = {g["id"] for g in json.loads(result.stdout)["gpus"]}
    assert {"A100-80GB", "H100-94GB", "H200-141GB"} <= ids


def test_gpus_lists_consumer_and_workstation_cards_with_their_specs():
    result = invoke("gpus", "--format", "csv")
    assert result.exit_code == 0
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO(result.stdout))}
    assert (rows["RTX 3090"]["vram_gb"], rows["RTX 3090"]["bf16_tflops_dense"]) == ("24.0", "71.0")
    turing = rows["RTX 2080 Ti"]
    assert (turing["bf16"], turing["fp16_tflops_dense"]) == ("False", "53.8")
    assert rows["RTX A4000"]["mem_bw_gbps"] == "448.0"
    assert {"RTX 3060", "RTX 4070 Ti Super", "Quadro RTX 6000", "RTX 5000 Ada"} <= set(rows)


def test_a_database_held_by_a_running_server_is_one_clear_line(db_held_by_another_process, db_path):
    result = invoke("offers", "--db", db_path)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "in use by another process" in lines[0]


def test_one_failing_provider_keeps_the_others_and_the_table_says_why(db_path, tmp_path):
    bad = tmp_path / "runpod.json"
    bad.write_text('{"errors": [{"message": "internal"}]}')
    result = invoke(
        "collect", "--replay", f"vastai={VAST}", "--replay", f"runpod={bad}", "--db", db_path
    )
    assert result.exit_code == 1
    rows = [line for line in result.output.splitlines() if "runpod" in line or "vastai" in line]
    assert any("vastai" in row and "ok" in row and "13" in row for row in rows)
    assert any("runpod" in row and "failed" in row for row in rows)
    offers = json.loads(invoke("offers", "--format", "json", "--db", db_path).stdout)["offers"]
    assert {o["provider"] for o in offers} == {"vastai"}


@respx.mock(assert_all_mocked=True)
def test_collect_with_a_config_file_uses_the_provider_keys_in_it(db_path, tmp_path, respx_mock):
    route = respx_mock.get(lambdalabs.URL).mock(
        return_value=httpx.Response(
            200, content=(FIXTURES / "lambda_instance_types.json").read_bytes()
        )
    )
    config = tmp_path / "gpuprices.toml"
    config.write_text('[api_keys]\nLAMBDA_API_KEY = "sk-from-the-file"\n')
    result = runner.invoke(
        app, ["collect", "--provider", "lambda", "--db", str(db_path), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    assert route.calls.last.request.headers["Authorization"] == "Bearer sk-from-the-file"


def test_offers_refuses_a_filter_value_in_one_line_with_exit_2(collected_db):
    result = runner.invoke(app, ["offers", "--db", str(collected_db), "--jurisdiction", "mars"])
    assert result.exit_code == 2
    assert "--jurisdiction" in result.output and "'eea' or 'eu'" in result.output
    assert "Traceback" not in result.output


def test_history_has_no_option_for_a_filter_history_does_not_apply(collected_db):
    result = runner.invoke(
        app, ["history", "--db", str(collected_db), "--gpu", "H100", "--min-gpu-count", "8"]
    )
    assert result.exit_code == 2 and "No such option" in result.output


def test_history_rows_name_the_form_factor(collected_db):
    data = invoke("history", "--gpu", "H100", "--since", "2025-12-31", "--format", "json",
                  "--db", collected_db)
    assert data.exit_code == 0, data.output
    forms = {s["form_factor"] for s in json.loads(data.stdout)["series"]} - {None}
    assert forms, "the recording has H100s of a known form factor"
    table = invoke("history", "--gpu", "H100", "--since", "2025-12-31", "--db", collected_db)
    assert table.exit_code == 0, table.output
    assert all(f in table.output for f in forms)


def test_help_reads_at_80_columns_without_bool_metavars(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for command in (["--help"], ["offers", "--help"], ["serve", "--help"],
                    ["quote", "--help"], ["alerts", "add", "--help"]):
        result = runner.invoke(app, command, env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        assert "<bool>" not in result.output and "╭" not in result.output, command
        assert max(len(line) for line in result.output.splitlines()) <= 80, command
    serve = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "80"}).output
    assert "--no-scheduler " in serve
