"""The edge logic (`decide`, pure) and rule validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipeline.alerts import (
    AlertKind,
    AlertRule,
    AlertSpec,
    Condition,
    InvalidAlertError,
    UnsafeTargetError,
)
from pipeline.alerts.evaluate import Observation, decide
from pipeline.alerts.rules import validate_spec
from pipeline.errors import UnknownGpuError, UnknownProviderError

T0 = datetime(2026, 3, 1, tzinfo=UTC)
URL = "http://127.0.0.1:9000/hook"


def price_rule(band: float = 0.05, cooldown: timedelta = timedelta(0)) -> AlertRule:
    condition = Condition.of(AlertKind.PRICE, gpu="H100-80GB", below_price_per_gpu_hour=1.50)
    return AlertRule(
        rule_id="alr_1", url=URL, condition=condition, band=band, cooldown=cooldown, created_at=T0
    )


def availability_rule(cooldown: timedelta = timedelta(0)) -> AlertRule:
    condition = Condition.of(AlertKind.AVAILABILITY, gpu="H100-80GB")
    return AlertRule(
        rule_id="alr_2", url=URL, condition=condition, band=0.0, cooldown=cooldown, created_at=T0
    )


def run(rule: AlertRule, values, step: timedelta = timedelta(minutes=10)) -> list[bool]:
    """Fires for a sequence of observations (prices, or sets of places)."""
    state, fired, now = None, [], T0
    for value in values:
        if isinstance(value, set):
            seen = Observation(float(len(value)), places=frozenset(value))
        else:
            seen = Observation(value)
        decision = decide(rule, state, seen, now)
        state, now = decision.state, now + step
        fired.append(decision.fire)
    return fired


def test_a_price_rule_fires_on_the_way_down_and_not_again_while_it_stays_down():
    assert run(price_rule(), [1.9, 1.4, 1.4, 1.3, 1.5]) == [False, True, False, False, False]


def test_a_price_rule_re_arms_only_above_threshold_plus_band():
    prices = [1.4, 1.54, 1.4, 1.56, 1.4]
    assert run(price_rule(band=0.05), prices) == [True, False, False, False, True]


def test_no_offer_at_all_counts_as_the_condition_being_false():
    assert run(price_rule(), [1.4, None, 1.4]) == [True, False, True]


def test_with_no_band_any_rise_above_the_threshold_re_arms():
    assert run(price_rule(band=0), [1.4, 1.51, 1.49]) == [True, False, True]


def test_the_threshold_itself_counts_as_at_or_below():
    assert run(price_rule(), [1.50]) == [True]


def test_a_cooldown_holds_the_event_back_and_fires_it_once_the_cooldown_is_over():
    rule = price_rule(band=0, cooldown=timedelta(minutes=25))
    # fired at 0; re-armed at 10; true again at 20 (cooling); 30 is past the cooldown
    assert run(rule, [1.4, 1.6, 1.4, 1.4, 1.4]) == [True, False, False, True, False]


def test_a_cooldown_drops_nothing_that_stopped_being_true_meanwhile():
    rule = price_rule(band=0, cooldown=timedelta(minutes=25))
    assert run(rule, [1.4, 1.6, 1.4, 1.6, 1.6]) == [True, False, False, False, False]


def test_availability_fires_for_each_place_where_the_gpu_was_not_available_before():
    a, b = "vastai/Texas, US", "runpod/EU-RO-1"
    places = [set(), {a}, {a}, {a, b}, {b}, {a, b}]
    assert run(availability_rule(), places) == [False, True, False, True, False, True]


def test_availability_under_cooldown_remembers_the_new_place_for_later():
    a, b = "vastai/Texas, US", "runpod/EU-RO-1"
    rule = availability_rule(cooldown=timedelta(minutes=15))
    assert run(rule, [{a}, {a, b}, {a, b}, {a, b}]) == [True, False, True, False]


def test_an_availability_event_names_only_the_new_places():
    rule = availability_rule()
    first = decide(rule, None, Observation(1.0, places=frozenset({"a/x"})), T0)
    second = decide(rule, first.state, Observation(2.0, places=frozenset({"a/x", "b/y"})), T0)
    assert second.fire and second.new_places == ("b/y",)


def spec(url: str = URL, **condition) -> AlertSpec:
    kind = condition.pop("kind", AlertKind.PRICE)
    return AlertSpec(url=url, condition=Condition.of(kind, **condition))


def test_a_price_rule_needs_a_known_gpu_and_a_positive_threshold():
    validate_spec(spec(gpu="H100", below_price_per_gpu_hour=2.0), allow_private=True)
    with pytest.raises(InvalidAlertError, match="below_price_per_gpu_hour"):
        validate_spec(spec(gpu="H100"), allow_private=True)
    with pytest.raises(InvalidAlertError, match="positive"):
        validate_spec(spec(gpu="H100", below_price_per_gpu_hour=-1.0), allow_private=True)
    with pytest.raises(UnknownGpuError):
        validate_spec(spec(gpu="H9000", below_price_per_gpu_hour=2.0), allow_private=True)
    with pytest.raises(InvalidAlertError, match="gpu"):
        validate_spec(spec(below_price_per_gpu_hour=2.0), allow_private=True)


def test_a_rule_names_only_known_providers_and_fields_of_its_kind():
    with pytest.raises(UnknownProviderError):
        validate_spec(
            spec(gpu="H100", below_price_per_gpu_hour=2.0, providers=("nosuchcloud",)),
            allow_private=True,
        )
    with pytest.raises(InvalidAlertError, match="below_price_per_gpu_hour"):
        validate_spec(
            spec(kind=AlertKind.AVAILABILITY, gpu="H100", below_price_per_gpu_hour=2.0),
            allow_private=True,
        )


def test_band_and_cooldown_must_be_sensible():
    base = spec(gpu="H100", below_price_per_gpu_hour=2.0)
    with pytest.raises(InvalidAlertError, match="band"):
        validate_spec(AlertSpec(base.url, base.condition, band=-0.1), allow_private=True)
    with pytest.raises(InvalidAlertError, match="cooldown"):
        validate_spec(
            AlertSpec(base.url, base.condition, cooldown=timedelta(days=90)), allow_private=True
        )


def test_the_target_is_checked_when_the_rule_is_validated():
    with pytest.raises(UnsafeTargetError):
        validate_spec(spec(gpu="H100", below_price_per_gpu_hour=2.0), allow_private=False)


def test_a_workload_rule_needs_a_workload_that_can_be_quoted_and_a_cost():
    workload = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": "50M"}
    validate_spec(
        spec(kind=AlertKind.WORKLOAD, workload=workload, below_cost_usd=20.0), allow_private=True
    )
    with pytest.raises(InvalidAlertError, match="below_cost_usd"):
        validate_spec(spec(kind=AlertKind.WORKLOAD, workload=workload), allow_private=True)
    with pytest.raises(InvalidAlertError, match="unknown fields colour"):
        validate_spec(
            spec(
                kind=AlertKind.WORKLOAD, workload={**workload, "colour": "red"}, below_cost_usd=20.0
            ),
            allow_private=True,
        )
    with pytest.raises(InvalidAlertError, match="method"):
        validate_spec(
            spec(kind=AlertKind.WORKLOAD, workload={"model": "Llama-3.1-8B"}, below_cost_usd=5.0),
            allow_private=True,
        )


def test_a_conditions_json_round_trips():
    condition = Condition.of(
        AlertKind.PRICE,
        gpu="H100",
        providers=("vastai",),
        region="US",
        min_gpu_count=8,
        below_price_per_gpu_hour=1.5,
    )
    assert Condition.from_json(condition.to_json()) == condition


def test_a_rules_repr_never_shows_its_secret():
    condition = Condition.of(AlertKind.AVAILABILITY, gpu="H100")
    rule = AlertRule(
        rule_id="alr_1",
        url=URL,
        condition=condition,
        band=0,
        cooldown=timedelta(0),
        created_at=T0,
        secret="whsec_c2VjcmV0",
    )
    assert "whsec_" not in repr(rule)
