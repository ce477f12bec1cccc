"""Vultr's plan lists (built in the documented shape: tests/fixtures/vultr_plans.json)."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from scrapers import Pricing, ProviderHTTPError, ProviderPayloadError, vultr
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("vultr_plans.json")
ANSWER = orjson.loads(BODY)
PLANS = ANSWER["plans"]["plans"]
METAL = ANSWER["plans-metal"]["plans_metal"]


def parsed(plans=PLANS, metal=METAL):
    return vultr.parse(
        vultr.joined(orjson.dumps({"plans": plans}), orjson.dumps({"plans_metal": metal})),
        OBSERVED_AT,
    )


def by_key(plans=PLANS, metal=METAL):
    return {(o.offer_id, o.pricing): o for o in parsed(plans, metal).offers}


def plan(plan_id, plans=PLANS + METAL):
    return next(p for p in plans if p["id"] == plan_id)


@respx.mock(assert_all_mocked=True)
def test_fetch_joins_the_plan_list_and_the_bare_metal_list_each_unchanged(
    respx_mock, client_factory
):
    plans, metal = orjson.dumps(ANSWER["plans"]), orjson.dumps(ANSWER["plans-metal"])
    respx_mock.get(vultr.URL).mock(return_value=httpx.Response(200, content=plans))
    respx_mock.get(vultr.METAL_URL).mock(return_value=httpx.Response(200, content=metal))
    with client_factory() as client:
        body = vultr.fetch(client, None)
    assert body == vultr.joined(plans, metal)
    assert vultr.parse(body, OBSERVED_AT).offers == vultr.parse(BODY, OBSERVED_AT).offers


@pytest.mark.parametrize("status", [401, 404, 502])
@respx.mock(assert_all_mocked=True)
def test_a_failing_bare_metal_list_fails_the_collection_never_half_of_it(
    status, respx_mock, client_factory
):
    respx_mock.get(vultr.URL).mock(return_value=httpx.Response(200, content=b'{"plans": []}'))
    respx_mock.get(vultr.METAL_URL).mock(return_value=httpx.Response(status))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match=f"HTTP {status}"):
        vultr.fetch(client, None)


def test_gpu_plans_are_offers_per_location_cpu_plans_none_and_vgpu_shares_rejected():
    result = vultr.parse(BODY, OBSERVED_AT)
    assert result.offer_count == 11
    assert not {o.offer_id.split("@")[0] for o in result.offers} & {"vc2-1c-1gb", "vbm-4c-32gb"}
    assert sorted((r.record_id, r.reason) for r in result.rejects) == [
        ("vcg-a100-1c-6g-4vram", "fractional GPU: vcg-a100-1c-6g-4vram has 4 GB of one 80 GB "
         "A100 (a vGPU share of 0.05 of a card), not a whole GPU; not priced as one"),
        ("vcg-a16-2c-8g-2vram", "fractional GPU: vcg-a16-2c-8g-2vram has 2 GB of one 16 GB A16 "
         "(a vGPU share of 0.125 of a card), not a whole GPU; not priced as one"),
    ]  # fmt: skip


def test_whole_gpus_are_counted_from_the_plans_vram_and_priced_per_plan():
    offers = by_key()
    a16 = offers[("vcg-a16-12c-128g-32vram@sjc", Pricing.ON_DEMAND)]
    assert (a16.gpu_count, a16.vram_gb, a16.price_quoted_per, a16.price_per_hour) == (
        2, 16, "instance", 0.942
    )  # fmt: skip
    assert a16.price_per_gpu_hour == pytest.approx(0.471)
    a100 = offers[("vcg-a100-12c-120g-80vram@fra", Pricing.ON_DEMAND)]
    assert (a100.gpu_raw, a100.gpu_count, a100.vcpus, a100.ram_gb) == ("A100", 1, 12, 120)
    vdm = offers[("vcg-a40-24c-120g-48vram@blr", Pricing.ON_DEMAND)]  # no GPU fields: the id
    assert (vdm.gpu_raw, vdm.gpu_count, vdm.vram_gb, vdm.tier) == ("A40", 1, 48, "vdm")


def test_bare_metal_gpus_come_from_gpu_type_or_the_id_and_preemptible_prices_are_spot():
    offers = by_key()
    h100 = [o for (oid, _), o in offers.items() if oid == "vbm-112c-2048gb-8-h100-gpu@sea"]
    assert {(o.pricing, o.price_per_hour, o.gpu_count) for o in h100} == {
        (Pricing.ON_DEMAND, 23.92, 8), (Pricing.SPOT, 18.4, 8)
    }  # fmt: skip
    mi300x = offers[("vbm-256c-2048gb-8-mi300x-gpu@ord", Pricing.SPOT)]  # no gpu_type
    assert (mi300x.gpu_raw, mi300x.gpu_count, mi300x.vram_gb) == ("MI300X", 8, 192)
    assert mi300x.price_per_gpu_hour == pytest.approx(1.84)
    assert (mi300x.vcpus, mi300x.disk_gb, mi300x.tier) == (256, 3576 * 8, "bare metal")
    # deploy_ondemand false: no on-demand offer at the hourly_cost it still states
    assert ("vbm-256c-2048gb-8-mi300x-gpu@ord", Pricing.ON_DEMAND) not in offers
    mi325x = offers[("vbm-256c-3072gb-8-mi325x-gpu", Pricing.SPOT)]
    assert (mi325x.gpu_count, mi325x.vram_gb, mi325x.region, mi325x.available) == (
        8, 256, None, False
    )  # fmt: skip


def test_an_l40_metal_id_is_the_l40s_and_a_plan_without_locations_is_listed_not_available():
    untyped = {k: v for k, v in plan("vbm-64c-2048gb-8-l40-gpu").items() if k != "gpu_type"}
    [offer] = parsed([], [untyped]).offers
    assert (offer.gpu_raw, offer.gpu_count, offer.region, offer.available) == (
        "L40S", 8, None, False
    )  # fmt: skip


def test_a_location_cost_overrides_the_price_in_that_region_only():
    cost = {"fra": {"hourly_cost": 2.5, "monthly_cost": 1825}}
    offers = by_key([{**plan("vcg-a100-12c-120g-80vram"), "location_cost": cost}], [])
    assert offers[("vcg-a100-12c-120g-80vram@fra", Pricing.ON_DEMAND)].price_per_hour == 2.5
    assert offers[("vcg-a100-12c-120g-80vram@ewr", Pricing.ON_DEMAND)].price_per_hour == 2.397


def test_empty_location_strings_are_skipped():
    offers = by_key([{**plan("vcg-a100-12c-120g-80vram"), "locations": ["ewr", "", "ord"]}], [])
    assert {o.region for o in offers.values()} == {"ewr", "ord"}


@pytest.mark.parametrize(
    ("plan_id", "change", "reason"),
    [("vcg-a100-12c-120g-80vram", {"gpu_vram_gb": 120}, "is not a whole number of 80 GB A100"),
     ("vcg-a100-12c-120g-80vram", {"gpu_type": "NVIDIA_Z9"}, "'Z9' has no known whole-card VRAM"),
     ("vcg-a100-12c-120g-80vram", {"hourly_cost": "2.397"}, "hourly_cost is not a number"),
     ("vcg-a100-12c-120g-80vram", {"hourly_cost": 0}, "price must be positive"),
     ("vbm-112c-2048gb-8-h100-gpu", {"hourly_cost_preemptible": None},
      "deploy_preemptible is true but hourly_cost_preemptible is missing"),
     ("vbm-112c-2048gb-8-h100-gpu", {"deploy_ondemand": False, "deploy_preemptible": False},
      "can be deployed neither on demand nor preemptible"),
     ("vbm-112c-2048gb-8-h100-gpu", {"locations": "sea"}, "locations is not a list")],
)  # fmt: skip
def test_a_malformed_plan_is_rejected_with_its_reason_and_the_rest_kept(plan_id, change, reason):
    plans = [{**p, **change} if p["id"] == plan_id else p for p in PLANS]
    metal = [{**p, **change} if p["id"] == plan_id else p for p in METAL]
    result = parsed(plans, metal)
    assert [r.record_id for r in result.rejects if reason in r.reason] == [plan_id]


@pytest.mark.parametrize(
    "body",
    [b'{"plans": {"plans": []}}', b'{"plans": {"plans": {}}, "plans-metal": {"plans_metal": []}}',
     b'{"plans": {"plans": []}, "plans-metal": []}'],
)  # fmt: skip
def test_an_answer_without_both_plan_lists_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="vultr"):
        vultr.parse(body, OBSERVED_AT)
