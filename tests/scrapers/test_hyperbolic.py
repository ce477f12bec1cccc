"""Hyperbolic's rental options (recorded: tests/fixtures/hyperbolic_rental_options.json)."""

from __future__ import annotations

import orjson
import pytest

from scrapers import FormFactor, Pricing, hyperbolic
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("hyperbolic_rental_options.json")
OPTIONS = orjson.loads(BODY)


def parsed(options=OPTIONS):
    return hyperbolic.parse(orjson.dumps(options), OBSERVED_AT)


def by_id(options=OPTIONS):
    return {o.offer_id: o for o in parsed(options).offers}


def test_the_recording_gives_its_13_options_as_on_demand_offers_without_rejects():
    result = hyperbolic.parse(BODY, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 13
    assert {o.pricing for o in result.offers} == {Pricing.ON_DEMAND}


def test_the_price_is_the_whole_options_cents_and_the_per_gpu_price_is_derived():
    node = by_id()["h100-sxm5-8-bare-metal-infiniband@eu-west-3"]
    assert (node.price_quoted_per, node.price_per_hour, node.gpu_count) == ("instance", 25.52, 8)
    assert node.price_per_gpu_hour == pytest.approx(3.19)
    one = by_id()["h100-sxm5-1-virtual-machine-ethernet-normal@us-east-1"]
    assert (one.price_per_hour, one.price_per_gpu_hour) == (3.19, 3.19)


def test_the_suppliers_cost_is_never_the_price():
    option = by_id()["h100-pcie-1-virtual-machine-ethernet-normal@ca-east-1"]
    assert option.price_per_hour == 2.75  # costPerHourCents 275, providerCostPerHourCents 444


def test_model_and_form_factor_are_joined_and_the_form_factor_kept():
    offers = by_id()
    pcie = offers["h100-pcie-1-virtual-machine-ethernet-normal@ca-east-1"]
    sxm = offers["h200-sxm5-8-virtual-machine-ethernet-normal@eu-north-5"]
    assert (pcie.gpu_raw, pcie.form_factor) == ("H100 PCIE", FormFactor.PCIE)
    assert (sxm.gpu_raw, sxm.form_factor) == ("H200 SXM5", FormFactor.SXM)


def test_machine_and_network_tell_options_of_one_gpu_apart_in_the_id_and_tier():
    offers = by_id()
    bare = offers["h100-sxm5-8-bare-metal-infiniband@uk-southeast-3"]
    vm = offers["h100-sxm5-8-virtual-machine-ethernet-rocev2@eu-north-4"]
    assert bare.tier == "bare-metal, infiniband" and vm.tier == "virtual-machine, ethernet (rocev2)"
    assert (bare.vcpus, bare.ram_gb, bare.disk_gb) == (96, 2000, 24960)  # cpuCount on bare metal
    assert (vm.vcpus, vm.ram_gb, vm.disk_gb) == (160, 1536, 10240)


def test_availability_is_as_stated_and_a_missing_count_is_a_listed_enabled_option():
    options = [dict(OPTIONS[6]), dict(OPTIONS[6], region="ca-east-9", totalAvailable=0),
               dict(OPTIONS[6], region="ca-east-8", enabled=False),
               dict(OPTIONS[0])]  # fmt: skip
    offers = by_id(options)
    assert offers["h100-pcie-1-virtual-machine-ethernet-normal@ca-east-1"].available  # 2 free
    assert not offers["h100-pcie-1-virtual-machine-ethernet-normal@ca-east-9"].available
    assert not offers["h100-pcie-1-virtual-machine-ethernet-normal@ca-east-8"].available
    assert offers["h100-sxm5-1-virtual-machine-ethernet-normal@us-east-1"].available  # no count


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"costPerHourCents": None}, "costPerHourCents is null"),
     ({"costPerHourCents": "319"}, "costPerHourCents is not a number"),
     ({"gpuType": ""}, "gpuType is not a non-empty string"),
     ({"enabled": "yes"}, "enabled is not true/false"),
     ({"totalAvailable": -1}, "totalAvailable is not a count"),
     ({"gpuCount": 0, "nodes": []}, "gpu_count 0: must be a whole number"),
     ({"costPerHourCents": 0}, "price must be positive"),
     ({"gpuCount": 2}, "gpuCount 2 is not its nodes' 1 GPUs")],
)  # fmt: skip
def test_a_malformed_option_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    result = parsed([dict(OPTIONS[0], **change), *OPTIONS[1:]])
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id.endswith("@us-east-1")
    assert orjson.loads(reject.raw)["region"] == "us-east-1"
    assert result.offer_count == 12


def test_an_option_without_its_price_key_is_rejected_naming_the_field():
    option = {k: v for k, v in OPTIONS[0].items() if k != "costPerHourCents"}
    [reject] = parsed([option]).rejects
    assert reject.reason == "missing field 'costPerHourCents'"


def test_a_record_that_is_not_an_object_is_rejected():
    result = parsed(["h100", *OPTIONS])
    assert [r.reason for r in result.rejects] == ["a rental option is not an object: 'h100'"]
    assert result.offer_count == 13
