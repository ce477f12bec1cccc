"""Alert rules honour where the GPU is: an EEA rule ignores cheaper offers elsewhere."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from pipeline.alerts import AlertKind, AlertSpec, Condition, create_alert, evaluate_alerts
from pipeline.collection.collect import run_collection
from pipeline.errors import PipelineError
from pipeline.settings import Settings
from tests.conftest import FIXTURES
from warehouse import alerts as wa

URL = "http://127.0.0.1:9/hook"
NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def settings(db_path):
    return Settings(db=db_path, providers=["vastai"], allow_private_webhooks=True)


def test_an_eea_rule_does_not_fire_for_a_cheaper_offer_outside_the_eea(
    warehouse, settings, tmp_path
):
    body = orjson.loads((FIXTURES / "vastai_bundles_europe.json").read_bytes())
    for offer in body["offers"]:
        if offer["gpu_name"] == "RTX 4090" and offer["geolocation"] == "Guangxi, CN":
            offer["dph_base"] = 0.15  # cheaper outside the EEA; Oslo, NO stays at 0.2467
    path = tmp_path / "cheaper-in-china.json"
    path.write_bytes(orjson.dumps(body))
    rule = dict(gpu="RTX 4090", pricing="on_demand", below_price_per_gpu_hour=0.20)
    eea_id = create_alert(
        warehouse,
        AlertSpec(URL, Condition.of(AlertKind.PRICE, jurisdiction="eea", **rule)),
        settings,
        NOW,
    ).rule.rule_id
    any_id = create_alert(
        warehouse, AlertSpec(URL, Condition.of(AlertKind.PRICE, **rule)), settings, NOW
    ).rule.rule_id
    run_collection(["vastai"], warehouse, replays={"vastai": path}, now=lambda: NOW)
    fired = evaluate_alerts(warehouse, settings, NOW)
    with warehouse.cursor() as cur:
        events = [orjson.loads(wa.get_delivery(cur, i).body) for i in fired]
    assert [e["data"]["rule"]["id"] for e in events] == [any_id]
    assert events[0]["data"]["offer"]["country"] == "CN"
    assert eea_id not in {e["data"]["rule"]["id"] for e in events}


def test_an_eea_rule_fires_on_an_eea_offer_and_says_where(warehouse, settings):
    rule = Condition.of(
        AlertKind.PRICE, gpu="A100-80GB", jurisdiction="eea", below_price_per_gpu_hour=1.0
    )
    create_alert(warehouse, AlertSpec(URL, rule), settings, NOW)
    run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles_europe.json"},
        now=lambda: NOW,
    )
    [delivery_id] = evaluate_alerts(warehouse, settings, NOW)
    with warehouse.cursor() as cur:
        event = orjson.loads(wa.get_delivery(cur, delivery_id).body)
    assert event["data"]["offer"]["eea"] is True
    assert event["data"]["rule"]["jurisdiction"] == "eea"


def test_a_rule_with_an_unknown_continent_is_refused(warehouse, settings):
    rule = Condition.of(AlertKind.PRICE, gpu="H100", continent="Mars", below_price_per_gpu_hour=1)
    with pytest.raises(PipelineError, match="valid: Africa"):
        create_alert(warehouse, AlertSpec(URL, rule), settings, NOW)
