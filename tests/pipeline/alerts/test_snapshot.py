"""Rules are evaluated against one in-memory snapshot per collection, not one query each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import warehouse.current
import warehouse.offers
from pipeline.alerts import AlertKind, AlertSpec, Condition, create_alert, evaluate_alerts
from pipeline.alerts.errors import TooManyAlertsError
from pipeline.alerts.snapshot import OfferSnapshot
from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.settings import Settings
from tests.conftest import FIXTURES

URL = "http://127.0.0.1:9/hook"
NOW = datetime(2026, 3, 1, tzinfo=UTC)
QUESTIONS = [
    {"gpu": "H100-80GB"},
    {"gpu": "H100-80GB", "pricing": "spot"},
    {"gpu": "A100", "min_gpu_count": 2},
    {"gpu": "RTX4090", "region": "cn"},
    {"region": "US", "limit": 1},
    {"region": "us", "include_unavailable": True},
    {"region": "zz-nowhere"},
    {"provider": "vastai", "country": "US"},
    {"continent": "Europe", "include_unavailable": True},
    {},
]


@pytest.fixture
def collected(warehouse):
    run_collection(
        ["vastai"],
        warehouse,
        replays={"vastai": FIXTURES / "vastai_bundles.json"},
        now=lambda: NOW - timedelta(minutes=5),
    )
    return warehouse


@pytest.mark.parametrize("question", QUESTIONS, ids=str)
def test_the_snapshot_answers_each_question_as_the_query_does(collected, question):
    query = OfferQuery.model_validate(question)
    snapshot = OfferSnapshot(collected, get_catalog())
    assert snapshot.offers(query) == current_offers(collected, query)


def test_every_rule_of_an_evaluation_reads_the_offers_once(collected, db_path, monkeypatch):
    settings = Settings(db=db_path, providers=["vastai"], allow_private_webhooks=True)
    conditions = [
        Condition.of(AlertKind.PRICE, gpu="H100-80GB", below_price_per_gpu_hour=100.0),
        Condition.of(AlertKind.AVAILABILITY, gpu="RTX4090", region="cn"),
        Condition.of(AlertKind.PRICE, gpu="A100", below_price_per_gpu_hour=0.01),
    ]
    for i in range(30):
        create_alert(collected, AlertSpec(URL, conditions[i % 3]), settings, NOW)
    calls = {"reads": 0}
    load = warehouse.current.CurrentOffers.load

    def counted_load(*args, **kwargs):
        calls["reads"] += 1
        return load(*args, **kwargs)

    monkeypatch.setattr(warehouse.current.CurrentOffers, "load", counted_load)
    fired = evaluate_alerts(collected, settings, NOW)
    assert calls == {"reads": 1}
    assert len(fired) == 20  # the 10 cheap-A100 rules hold no offer that cheap


def test_rules_past_the_setting_are_refused_saying_how_to_make_room(collected, db_path):
    settings = Settings(db=db_path, allow_private_webhooks=True, max_alert_rules=3)
    spec = AlertSpec(
        URL, Condition.of(AlertKind.PRICE, gpu="H100-80GB", below_price_per_gpu_hour=2)
    )
    for _ in range(3):
        create_alert(collected, spec, settings, NOW)
    with pytest.raises(TooManyAlertsError, match="GPUPRICES_MAX_ALERT_RULES"):
        create_alert(collected, spec, settings, NOW)
