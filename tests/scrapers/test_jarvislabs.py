"""JarvisLabs' server_meta (tests/fixtures/jarvislabs_server_meta.json: built in the SDK's shape
from a published read of 2026-08-17, see tests/fixtures/README.md). Fetch errors, the key and the
CLI are in test_keyed_endpoints.py."""

from __future__ import annotations

import orjson
import pytest

from pipeline.catalog import get_catalog
from pipeline.location import get_locator
from scrapers import Pricing, ProviderPayloadError, jarvislabs
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("jarvislabs_server_meta.json")
META = orjson.loads(BODY)


def parsed(rows, **top):
    return jarvislabs.parse(orjson.dumps({**META, "server_meta": rows, **top}), OBSERVED_AT)


def by_id(rows=META["server_meta"]):
    return {(o.offer_id, o.pricing): o for o in parsed(rows).offers}


def row(gpu_type, region, workload):
    [found] = [r for r in META["server_meta"] if (r["gpu_type"], r["region"],
               r["workload_type"]) == (gpu_type, region, workload)]  # fmt: skip
    return found


def test_every_row_of_the_recording_becomes_offers_without_a_reject():
    result = jarvislabs.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    # 12 India rows x (1-GPU, 8-GPU) on demand, spot on the 7 container rows; EU: 1 GPU
    assert result.offer_count == 12 * 2 + 7 * 2 + 2


def test_the_price_is_per_gpu_and_an_instance_of_8_costs_8_times_it():
    offers = by_id()
    one = offers[("RTX-PRO6000x1@india-chennai-01/vm", Pricing.ON_DEMAND)]
    eight = offers[("RTX-PRO6000x8@india-chennai-01/vm", Pricing.ON_DEMAND)]
    assert (one.price_quoted_per, one.price_per_gpu_hour, one.price_per_hour) == ("gpu", 1.89, 1.89)
    assert eight.price_per_hour == pytest.approx(15.12)  # the 2026-08-17 read billed 8 x 1.89
    assert (eight.vcpus, eight.ram_gb, eight.vram_gb) == (224, 1280, 96)  # 28 and 160 GB per GPU


def test_spot_is_offered_for_containers_only_never_for_a_vm_row():
    offers = by_id()
    vm = row("RTX-PRO6000", "india-chennai-01", "vm")
    assert vm["spot_price"] == 0.99  # served, and still no spot VM
    assert ("RTX-PRO6000x1@india-chennai-01/vm", Pricing.SPOT) not in offers
    spot = offers[("RTX-PRO6000x1@india-chennai-01/container", Pricing.SPOT)]
    assert (spot.price_per_gpu_hour, spot.tier) == (0.99, "container")
    vm_ids = {k for k in offers if k[0].endswith("/vm")}
    assert {pricing for _, pricing in vm_ids} == {Pricing.ON_DEMAND}


def test_on_demand_counts_effective_free_devices_and_spot_counts_free_devices():
    offers = by_id()
    # RTX PRO 6000 container: 0 free now, 8 effectively free: on demand yes, spot no
    container = "RTX-PRO6000x{}@india-chennai-01/container"
    assert offers[(container.format(8), Pricing.ON_DEMAND)].available is True
    assert offers[(container.format(1), Pricing.SPOT)].available is False
    # RTX PRO 6000 VM: 6 effectively free: one GPU yes, a whole 8-GPU instance no
    assert offers[("RTX-PRO6000x1@india-chennai-01/vm", Pricing.ON_DEMAND)].available is True
    assert offers[("RTX-PRO6000x8@india-chennai-01/vm", Pricing.ON_DEMAND)].available is False
    assert offers[("A100-80GBx1@india-noida-01/vm", Pricing.ON_DEMAND)].available is False


def test_a_row_without_effective_free_devices_is_admitted_on_free_devices():
    rtx = dict(row("L4", "india-noida-01", "vm"), num_free_devices=2)
    del rtx["effective_num_free_devices"]
    offers = by_id([rtx])
    assert offers[("L4x1@india-noida-01/vm", Pricing.ON_DEMAND)].available is True
    assert offers[("L4x8@india-noida-01/vm", Pricing.ON_DEMAND)].available is False


def test_europe_rows_serve_both_workloads_one_gpu_each_without_spot():
    offers = by_id()
    eu = {k: o for k, o in offers.items() if "europe-01" in k[0]}
    assert set(eu) == {("H100x1@europe-01", Pricing.ON_DEMAND),
                       ("H200x1@europe-01", Pricing.ON_DEMAND)}  # fmt: skip
    assert {o.tier for o in eu.values()} == {"vm or container"}
    # a null workload may be a container, so a spot price there would be an offer
    h100 = dict(row("H100", "europe-01", None), spot_price=1.5)
    assert ("H100x1@europe-01", Pricing.SPOT) in by_id([h100])


def test_every_gpu_spelling_resolves_and_the_40gb_a100_is_not_the_80gb_one():
    catalog = get_catalog()
    offers = jarvislabs.parse(BODY, OBSERVED_AT).offers
    for offer in offers:
        assert catalog.resolve(offer.gpu_raw, offer.vram_gb).gpu is not None, offer.gpu_raw
    assert catalog.resolve("A100-80GB", 80).gpu == "A100-80GB"
    assert catalog.resolve("A100", 40).gpu == "A100-40GB"
    assert catalog.resolve("RTX PRO 6000", 96).gpu == catalog.resolve("RTX-PRO6000", 96).gpu


def test_regions_are_placed_in_india_and_finland():
    locator = get_locator()
    assert locator.locate("jarvislabs", "india-chennai-01").country == "IN"
    assert locator.locate("jarvislabs", "india-noida-01").country == "IN"
    europe = locator.locate("jarvislabs", "europe-01")
    assert (europe.country, europe.eea) == ("FI", True)


def test_the_answers_currency_is_the_offers_currency():
    [offer, *_] = parsed([row("L4", "india-noida-01", "vm")], currency="INR").offers
    assert offer.currency == "INR"
    assert parsed([row("L4", "india-noida-01", "vm")]).offers[0].currency == "USD"
    with pytest.raises(ProviderPayloadError, match="currency 'dollars'"):
        parsed([], currency="dollars")


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"workload_type": "serverless"}, "unknown workload_type 'serverless'"),
     ({"price_per_hour": None}, "price_per_hour is not a number"),
     ({"price_per_hour": 0}, "price must be positive"),
     ({"num_gpus": "eight"}, "num_gpus is not a whole number"),
     ({"vram": "lots"}, "vram 'lots' is not a number of GB"),
     ({"region": ""}, "region is not a non-empty string")],
)  # fmt: skip
def test_a_malformed_row_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    broken = dict(row("L4", "india-noida-01", "vm"), **change)
    result = parsed([broken, row("H200", "india-noida-01", "vm")])
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id == "L4"
    assert {o.gpu_raw for o in result.offers} == {"H200"}


def test_an_answer_without_a_server_meta_list_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="jarvislabs: body has no 'server_meta' list"):
        jarvislabs.parse(b'{"message": "Not authenticated"}', OBSERVED_AT)
