"""Index alerts: the hourly index moved by x% against its value `within` before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from pipeline.alerts import AlertKind, AlertSpec, Condition, create_alert, evaluate_alerts
from pipeline.alerts.errors import InvalidAlertError
from pipeline.settings import Settings
from tests.api.rest.routes.test_index import replay, vastai_body
from warehouse import Warehouse
from warehouse import alerts as wa

URL = "http://127.0.0.1:9/hook"
T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
H100_PER_GPU_HOUR = 1.9333375
DAY = timedelta(hours=24)


@pytest.fixture
def settings(db_path):
    return Settings(db=db_path, providers=["vastai"], allow_private_webhooks=True)


def index_rule(warehouse, settings, change: float, **scope) -> str:
    condition = Condition.of(
        AlertKind.INDEX, index_change_percent=change, within=DAY, gpu="H100-80GB", **scope
    )
    return create_alert(warehouse, AlertSpec(URL, condition), settings, T0).rule.rule_id


def bodies(warehouse, ids: list[str]) -> list[dict]:
    with warehouse.cursor() as cur:
        return [orjson.loads(wa.get_delivery(cur, i).body) for i in ids]


def test_an_index_alert_fires_once_on_a_10_percent_drop(warehouse, settings, tmp_path):
    drop = index_rule(warehouse, settings, -10)
    deeper = index_rule(warehouse, settings, -15)
    rise = index_rule(warehouse, settings, +10)
    replay(warehouse, tmp_path, "vastai", T0, vastai_body(h100=True, factor=1.0))
    assert evaluate_alerts(warehouse, settings, T0) == []
    replay(warehouse, tmp_path, "vastai", T0 + DAY, vastai_body(h100=True, factor=0.88))
    fired = evaluate_alerts(warehouse, settings, T0 + DAY)
    [event] = bodies(warehouse, fired)
    assert event["type"] == "index.moved"
    assert event["data"]["rule"]["id"] == drop and deeper != drop != rise
    index = event["data"]["index"]
    assert index["value"] == pytest.approx(0.88 * H100_PER_GPU_HOUR)
    assert index["previous_value"] == pytest.approx(H100_PER_GPU_HOUR)
    assert index["change_percent"] == pytest.approx(-12.0)
    later = T0 + DAY + timedelta(minutes=20)  # the same hour, still 12 % below
    replay(warehouse, tmp_path, "vastai", later, vastai_body(h100=True, factor=0.88))
    assert evaluate_alerts(warehouse, settings, later) == []


def test_an_index_alert_needs_one_gpu_and_a_move(warehouse, settings):
    with pytest.raises(InvalidAlertError, match="several GPUs"):
        create_alert(
            warehouse,
            AlertSpec(
                URL, Condition.of(AlertKind.INDEX, index_change_percent=-10, within=DAY, gpu="H100")
            ),
            settings,
            T0,
        )
    with pytest.raises(InvalidAlertError, match="index_change_percent"):
        create_alert(
            warehouse,
            AlertSpec(
                URL,
                Condition.of(
                    AlertKind.INDEX, index_change_percent=-100, within=DAY, gpu="H100-80GB"
                ),
            ),
            settings,
            T0,
        )
    with pytest.raises(InvalidAlertError, match="region"):
        index_rule(warehouse, settings, -10, region="US")


def test_alerts_add_index_change_from_the_command_line(db_path, monkeypatch):
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")
    Warehouse.open(db_path).close()
    result = CliRunner().invoke(
        app,
        [
            "alerts",
            "add",
            "--gpu",
            "H100-80GB",
            "--index-change",
            "-10%",
            "--within",
            "24h",
            "--pricing",
            "spot",
            "--url",
            URL,
            "--format",
            "json",
            "--db",
            str(db_path),
        ],
    )
    assert result.exit_code == 0, result.output
    created = orjson.loads(result.stdout)
    assert (created["kind"], created["index_change_percent"], created["within_seconds"]) == (
        "index",
        -10.0,
        86400.0,
    )
    assert created["pricing"] == "spot"
    bad = CliRunner().invoke(
        app,
        [
            "alerts",
            "add",
            "--gpu",
            "H100-80GB",
            "--index-change",
            "lots",
            "--url",
            URL,
            "--db",
            str(db_path),
        ],
    )
    assert bad.exit_code == 2 and "percentage" in bad.output
