"""Issue 32's provider-health alerts: one signed `provider.degraded` per episode, then one
`provider.recovered` after two clean runs in a row (issue 46: no flapping); a provider without
its required key is never degraded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from standardwebhooks import Webhook

from pipeline.alerts import (
    AlertKind,
    AlertSpec,
    Condition,
    InvalidAlertError,
    WebhookSender,
    create_alert,
    evaluate_alerts,
)
from pipeline.alerts.health import MIN_REOPEN_AFTER, RECOVERY_CLEAN_RUNS
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES
from tests.pipeline.alerts.receiver import Clock, receiving

FAST = {"allow_private_webhooks": True, "webhook_timeout_s": 0.5, "webhook_backoff": 1}


@pytest.fixture
def clock():
    return Clock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def settings(db_path):
    return Settings(db=db_path, providers=["vastai"], scheduler=False, **FAST)


def drifted_vast(tmp_path: Path) -> Path:
    """The Vast.ai fixture with `geolocation` renamed and a GPU name no catalog knows."""
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    for offer in body["offers"]:
        offer["geo_location"] = offer.pop("geolocation", None)
    body["offers"][0]["gpu_name"] = "RTX PRO 9000 Rubin"
    path = tmp_path / "vast-drifted.json"
    path.write_bytes(orjson.dumps(body))
    return path


def broken(tmp_path: Path) -> Path:
    """An answer that is not JSON (a maintenance page): the run fails."""
    path = tmp_path / "broken.json"
    path.write_bytes(b"<html>maintenance</html>")
    return path


def health_rule(url: str, **scope) -> AlertSpec:
    return AlertSpec(url=url, condition=Condition.of(AlertKind.PROVIDER_HEALTH, **scope))


def collect_and_send(warehouse, settings, clock, path: Path, provider: str = "vastai") -> None:
    clock.advance(timedelta(seconds=20))  # receivers check timestamps: ±5 min
    run_collection([provider], warehouse, replays={provider: path}, now=clock)
    fired = evaluate_alerts(warehouse, settings, clock())
    WebhookSender(warehouse, settings, now=clock).deliver(fired)


def test_a_drifted_answer_sends_one_signed_degraded_event_then_one_recovered_after_a_clean_run(
    warehouse, settings, clock, tmp_path
):
    clean, drifted = FIXTURES / "vastai_bundles.json", drifted_vast(tmp_path)
    with receiving() as receiver:
        created = create_alert(
            warehouse, health_rule(receiver.url, providers=("vastai",)), settings, clock()
        )
        collect_and_send(warehouse, settings, clock, clean)
        assert receiver.requests == []
        collect_and_send(warehouse, settings, clock, drifted)
        assert len(receiver.requests) == 1
        collect_and_send(warehouse, settings, clock, broken(tmp_path))  # a failure
        collect_and_send(warehouse, settings, clock, broken(tmp_path))
        assert len(receiver.requests) == 1  # the same episode: no repeat
        collect_and_send(warehouse, settings, clock, drifted)  # same shape again: clean
        assert len(receiver.requests) == 1  # one clean run does not end the episode
        collect_and_send(warehouse, settings, clock, drifted)  # the second in a row does
        assert len(receiver.requests) == 2
        collect_and_send(warehouse, settings, clock, drifted)
        assert len(receiver.requests) == 2

    verifier = Webhook(created.secret)
    degraded, recovered = (verifier.verify(r.body, r.headers) for r in receiver.requests)
    assert (degraded["type"], recovered["type"]) == ("provider.degraded", "provider.recovered")
    data = degraded["data"]
    assert data["provider"] == "vastai" and data["rule"]["id"] == created.rule.rule_id
    assert data["fields_added"] == ["offers[].geo_location"]
    assert data["fields_missing"] == ["offers[].geolocation"]
    assert any("shape changed" in r for r in data["reasons"])
    assert any("resolved share" in r for r in data["reasons"])
    assert recovered["data"]["health"] == "ok"


def test_three_failed_runs_in_a_row_degrade_a_provider_and_two_do_not(
    warehouse, settings, clock, tmp_path
):
    with receiving() as receiver:
        create_alert(warehouse, health_rule(receiver.url), settings, clock())
        collect_and_send(warehouse, settings, clock, FIXTURES / "vastai_bundles.json")
        for _ in range(2):
            collect_and_send(warehouse, settings, clock, broken(tmp_path))
        assert receiver.requests == []
        collect_and_send(warehouse, settings, clock, broken(tmp_path))
        [request] = receiver.requests
    event = orjson.loads(request.body)
    assert event["type"] == "provider.degraded"
    assert event["data"]["reasons"] == ["failed 3 runs in a row"]


def test_a_provider_whose_required_key_is_not_set_is_not_configured_never_degraded(
    warehouse, settings, clock
):
    with receiving() as receiver:
        create_alert(warehouse, health_rule(receiver.url), settings, clock())
        for _ in range(4):
            clock.advance(timedelta(seconds=20))  # receivers check timestamps: ±5 min
            [report] = run_collection(["lambda"], warehouse, env={}, now=clock)
            assert report.status == "failed" and "LAMBDA_API_KEY" in (report.error or "")
            WebhookSender(warehouse, settings, now=clock).deliver(
                evaluate_alerts(warehouse, settings, clock())
            )
        assert receiver.requests == []
    from pipeline.market.quality import provider_health

    assert provider_health(warehouse)["lambda"]["health"] == "not_configured"


def test_a_provider_health_rule_takes_no_gpu_or_threshold(warehouse, settings, clock):
    with pytest.raises(InvalidAlertError, match="provider-health alert does not filter on gpu"):
        create_alert(
            warehouse, health_rule("http://127.0.0.1:9/hook", gpu="H100-80GB"), settings, clock()
        )


def malformed(tmp_path: Path) -> Path:
    """JSON of the wrong shape (offers is not a list): the run fails, its shape differs."""
    path = tmp_path / "malformed.json"
    path.write_bytes(orjson.dumps({"offers": {"error": "rate limited"}, "retry_after": 5}))
    return path


def test_an_answer_alternating_good_and_malformed_shape_sends_one_degraded_and_never_flaps(
    warehouse, settings, clock, tmp_path
):
    good, bad = FIXTURES / "vastai_bundles.json", malformed(tmp_path)
    with receiving() as receiver:
        create_alert(warehouse, health_rule(receiver.url, providers=("vastai",)), settings, clock())
        for run in range(40):
            collect_and_send(warehouse, settings, clock, good if run % 2 == 0 else bad)
        assert [orjson.loads(r.body)["type"] for r in receiver.requests] == ["provider.degraded"]
        # a sustained recovery: clean runs in a row, and the episode ends once
        for _ in range(RECOVERY_CLEAN_RUNS):
            collect_and_send(warehouse, settings, clock, good)
        collect_and_send(warehouse, settings, clock, good)
        types = [orjson.loads(r.body)["type"] for r in receiver.requests]
    assert types == ["provider.degraded", "provider.recovered"]


def test_a_closed_episode_does_not_reopen_within_the_minimum_time_but_does_after(
    warehouse, settings, clock, tmp_path
):
    good, bad = FIXTURES / "vastai_bundles.json", malformed(tmp_path)
    with receiving() as receiver:
        create_alert(warehouse, health_rule(receiver.url, providers=("vastai",)), settings, clock())
        collect_and_send(warehouse, settings, clock, good)
        collect_and_send(warehouse, settings, clock, bad)
        for _ in range(RECOVERY_CLEAN_RUNS):
            collect_and_send(warehouse, settings, clock, good)
        assert len(receiver.requests) == 2  # degraded, recovered
        collect_and_send(warehouse, settings, clock, bad)  # soon after it closed: held back
        assert len(receiver.requests) == 2
        clock.advance(MIN_REOPEN_AFTER)
        collect_and_send(warehouse, settings, clock, bad)  # still degraded, long after: reopens
        types = [orjson.loads(r.body)["type"] for r in receiver.requests]
    assert types == ["provider.degraded", "provider.recovered", "provider.degraded"]
