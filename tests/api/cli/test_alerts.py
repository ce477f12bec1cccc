"""`gpuprices alerts ...` and the alerts a one-shot `collect --replay` evaluates and sends."""

from __future__ import annotations

import json

import pytest
from standardwebhooks import Webhook
from typer.testing import CliRunner

from api.cli.commands import app
from tests.pipeline.alerts.receiver import Answer, receiving, vast_bundles
from warehouse import Warehouse

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def local_hooks(monkeypatch):
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")


def add_price_alert(db_path, url, *extra) -> dict:
    result = invoke(
        "alerts",
        "add",
        "--url",
        url,
        "--gpu",
        "H100-80GB",
        "--below",
        "1.50",
        "--pricing",
        "on_demand",
        "--format",
        "json",
        "--db",
        db_path,
        *extra,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_add_prints_the_rule_its_id_and_its_secret_once(db_path, local_hooks):
    result = invoke(
        "alerts",
        "add",
        "--url",
        "http://127.0.0.1:9/hook",
        "--gpu",
        "H100-80GB",
        "--below",
        "1.5",
        "--provider",
        "vastai",
        "--cooldown",
        "1h",
        "--db",
        db_path,
    )
    assert result.exit_code == 0, result.output
    assert "alr_" in result.stdout and "whsec_" in result.stdout
    assert "H100-80GB at or below $1.5/GPU-h (vastai, on_demand)" in result.stdout
    listed = invoke("alerts", "list", "--format", "json", "--db", db_path)
    assert listed.exit_code == 0 and "whsec_" not in listed.stdout
    [alert] = json.loads(listed.stdout)["alerts"]
    assert alert["cooldown_seconds"] == 3600 and alert["providers"] == ["vastai"]
    table = invoke("alerts", "list", "--db", db_path)
    assert table.exit_code == 0 and alert["id"] in table.stdout


def test_an_unsafe_target_is_one_red_line_and_exit_1(db_path):
    result = invoke(
        "alerts",
        "add",
        "--url",
        "http://10.0.0.1/",
        "--gpu",
        "H100",
        "--below",
        "2",
        "--db",
        db_path,
    )
    assert result.exit_code == 1
    assert "error:" in result.output and "must use https" in result.output


def test_a_host_name_idna_refuses_is_one_line_and_exit_1(db_path):
    result = invoke(
        "alerts", "add", "--url", "https://xn--/", "--gpu", "H100", "--below", "2",
        "--db", db_path,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "host name" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_missing_or_double_condition_is_a_usage_error(db_path):
    url = "https://hooks.example.com/x"
    assert invoke("alerts", "add", "--url", url, "--gpu", "H100", "--db", db_path).exit_code == 2
    both = invoke(
        "alerts",
        "add",
        "--url",
        url,
        "--gpu",
        "H100",
        "--below",
        "2",
        "--available",
        "--db",
        db_path,
    )
    assert both.exit_code == 2 and "give one of" in both.output


def test_rm_deletes_and_a_second_rm_says_there_is_no_such_alert(db_path, local_hooks):
    alert = add_price_alert(db_path, "http://127.0.0.1:9/hook")
    assert invoke("alerts", "rm", alert["id"], "--db", db_path).exit_code == 0
    again = invoke("alerts", "rm", alert["id"], "--db", db_path)
    assert again.exit_code == 1 and "No alert" in again.output


def test_collect_with_replay_sends_the_first_attempt_before_it_exits(
    db_path, tmp_path, local_hooks
):
    cheap = vast_bundles(tmp_path, 1.40)
    with receiving() as receiver:
        alert = add_price_alert(db_path, receiver.url)
        first = invoke("collect", "--replay", f"vastai={cheap}", "--db", db_path)
        assert first.exit_code == 0, first.output
        assert "delivered HTTP 200" in first.output
        assert len(receiver.requests) == 1
        again = invoke("collect", "--replay", f"vastai={cheap}", "--db", db_path)
        assert again.exit_code == 0 and len(receiver.requests) == 1
    [request] = receiver.requests
    event = Webhook(alert["secret"]).verify(request.body, request.headers)
    assert event["type"] == "price.below" and event["data"]["rule"]["id"] == alert["id"]
    log = invoke("alerts", "deliveries", alert["id"], "--format", "json", "--db", db_path)
    [delivery] = json.loads(log.stdout)["deliveries"]
    assert delivery["status"] == "delivered" and delivery["id"] == request.headers["webhook-id"]


def test_a_failing_receiver_leaves_the_event_pending_for_serve(db_path, tmp_path, local_hooks):
    with receiving(default=Answer(503)) as receiver:
        alert = add_price_alert(db_path, receiver.url)
        result = invoke(
            "collect", "--replay", f"vastai={vast_bundles(tmp_path, 1.4)}", "--db", db_path
        )
    assert result.exit_code == 0
    assert "retry" in result.output and "`serve` retries in" in result.output
    log = invoke("alerts", "deliveries", alert["id"], "--db", db_path)
    assert log.exit_code == 0 and "pending after 1 attempt(s)" in log.stdout
    assert "HTTP 503" in log.stdout


def test_alerts_test_sends_a_signed_test_event(db_path, local_hooks):
    with receiving() as receiver:
        alert = add_price_alert(db_path, receiver.url)
        result = invoke("alerts", "test", alert["id"], "--db", db_path)
    assert result.exit_code == 0, result.output
    assert "alert.test: delivered after 1 attempt(s)" in result.stdout
    [request] = receiver.requests
    assert Webhook(alert["secret"]).verify(request.body, request.headers)["type"] == "alert.test"


def test_testing_an_unknown_alert_is_exit_1(db_path):
    Warehouse.open(db_path).close()
    result = invoke("alerts", "test", "alr_nope", "--db", db_path)
    assert result.exit_code == 1 and "No alert 'alr_nope'" in result.output


def test_a_workload_alert_is_added_from_a_saved_job_file(db_path, tmp_path, local_hooks):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": "Llama-3.1-8B", "method": "full", "tokens": "50M"}))
    result = invoke(
        "alerts",
        "add",
        "--url",
        "http://127.0.0.1:9/hook",
        "--workload",
        job,
        "--below-cost",
        "5.5",
        "--gpu",
        "H100-80GB",
        "--band",
        "0.5",
        "--format",
        "json",
        "--db",
        db_path,
    )
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert created["kind"] == "workload" and created["below_cost_usd"] == 5.5
    assert created["workload"]["model"] == "Llama-3.1-8B" and created["band"] == 0.5
    half = invoke(
        "alerts", "add", "--url", "http://127.0.0.1:9/hook", "--below-cost", "5", "--db", db_path
    )
    assert half.exit_code == 2 and "--workload" in half.output


def test_collect_prints_its_summary_and_sends_the_other_alerts_when_one_rule_is_broken(
    db_path, tmp_path, local_hooks
):
    from warehouse import Warehouse

    with receiving() as receiver:
        broken = add_price_alert(db_path, receiver.url)
        healthy = add_price_alert(db_path, receiver.url)
        with Warehouse.open(db_path) as warehouse, warehouse.transaction() as conn:
            conn.execute(  # a threshold of the wrong type, as a hand edit could leave it
                "UPDATE alert_rules SET condition_json = replace(condition_json, '1.5', '\"1.5\"')"
                " WHERE rule_id = ?",
                [broken["id"]],
            )
        result = invoke(
            "collect", "--replay", f"vastai={vast_bundles(tmp_path, 1.4)}", "--db", db_path
        )
    assert result.exit_code == 0, result.output
    assert "vastai" in result.output and "Traceback" not in result.output
    assert "delivered HTTP 200" in result.output
    [request] = receiver.requests
    event = Webhook(healthy["secret"]).verify(request.body, request.headers)
    assert event["data"]["rule"]["id"] == healthy["id"]
    shown = invoke("alerts", "list", "--format", "json", "--db", db_path)
    errors = {a["id"]: a["evaluation_error"] for a in json.loads(shown.stdout)["alerts"]}
    assert errors[healthy["id"]] is None and errors[broken["id"]].startswith("TypeError:")
    table = invoke("alerts", "list", "--db", db_path)
    assert table.stdout.count("last evaluation failed: TypeError:") == 1


def test_adding_past_the_rule_limit_is_one_line_and_exit_1(db_path, local_hooks, monkeypatch):
    monkeypatch.setenv("GPUPRICES_MAX_ALERT_RULES", "1")
    add_price_alert(db_path, "http://127.0.0.1:9/hook")
    result = invoke(
        "alerts", "add", "--url", "http://127.0.0.1:9/hook", "--gpu", "H100", "--below", "2",
        "--db", db_path,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "GPUPRICES_MAX_ALERT_RULES" in result.output and "Traceback" not in result.output
