"""CloudRift's instance-type list (built in the documented shape:
tests/fixtures/cloudrift_instance_types.json)."""

from __future__ import annotations

import json

import httpx
import orjson
import pytest
import respx

from scrapers import Pricing, ProviderPayloadError, cloudrift
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("cloudrift_instance_types.json")
ANSWER = orjson.loads(BODY)
TYPES = ANSWER["data"]["instance_types"]
DC = "us-east-nc-nr-1"


def parsed(types=TYPES):
    return cloudrift.parse(orjson.dumps({**ANSWER, "data": {"instance_types": types}}), OBSERVED_AT)


def by_id(types=TYPES):
    return {o.offer_id: o for o in parsed(types).offers}


@respx.mock(assert_all_mocked=True)
def test_fetch_posts_the_versioned_selector_for_every_vm_type_without_a_key(
    respx_mock, client_factory
):
    route = respx_mock.post(cloudrift.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert cloudrift.fetch(client, None) == BODY
    sent = json.loads(route.calls.last.request.content)
    selector = {"ByServiceAndLocation": {"services": ["vm"]}}
    assert sent == {"version": "2025-03-21", "data": {"selector": selector}}


def test_each_variant_is_an_on_demand_offer_per_hosting_datacenter():
    result = cloudrift.parse(BODY, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 6
    assert {o.pricing for o in result.offers} == {Pricing.ON_DEMAND}
    assert f"rtx49-8c-nr.2@{DC}" in by_id()


def test_the_price_is_the_variants_cents_per_instance_and_the_per_gpu_price_derived():
    offers = by_id()
    two = offers[f"rtx49-8c-nr.2@{DC}"]
    assert (two.price_quoted_per, two.price_per_hour, two.gpu_count) == ("instance", 0.78, 2)
    assert two.price_per_gpu_hour == pytest.approx(0.39)
    assert offers["rtxpro6000-11-50-500-1l.1"].price_per_hour == pytest.approx(1.3936)
    amd = offers[f"mi350x-24c-nr.8@{DC}"]
    assert (amd.gpu_raw, amd.price_per_gpu_hour) == ("MI350X", pytest.approx(2.5))


def test_bytes_are_read_as_gib_per_gpu_and_vcpus_are_logical_cpus():
    one = by_id()[f"rtx49-8c-nr.1@{DC}"]
    assert (one.vram_gb, one.ram_gb, one.disk_gb, one.vcpus) == (24, 50, 500, 16)
    variant = {k: v for k, v in TYPES[0]["variants"][0].items() if k != "logical_cpu_count"}
    [offer] = parsed([{**TYPES[0], "variants": [variant]}]).offers
    assert offer.vcpus == 8  # cpu_count when no logical count is given


def test_availability_is_a_free_node_in_that_datacenter_and_a_variant_hosted_nowhere_is_not():
    offers = by_id()
    assert offers[f"rtx49-8c-nr.1@{DC}"].available
    assert not offers[f"rtx49-8c-nr.4@{DC}"].available  # hosted there, no node free
    unhosted = offers["rtxpro6000-11-50-500-1l.1"]
    assert (unhosted.region, unhosted.available) == (None, False)


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"cost_per_hour": None}, "cost_per_hour is null"),
     ({"cost_per_hour": "39"}, "cost_per_hour is not a number"),
     ({"nodes_per_dc": [DC]}, "nodes_per_dc is not a map of datacenter to node count"),
     ({"gpu_count": 0}, "gpu_count 0: must be a whole number"),
     ({"vram": 24 * 1024**4}, "vram_gb 24576.0: must be GB per GPU")],
)  # fmt: skip
def test_a_malformed_variant_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    variants = [dict(TYPES[0]["variants"][0], **change), *TYPES[0]["variants"][1:]]
    result = parsed([{**TYPES[0], "variants": variants}, *TYPES[1:]])
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id == "rtx49-8c-nr.1"
    assert result.offer_count == 5


def test_a_type_without_a_gpu_name_or_variants_is_rejected_naming_it():
    result = parsed([{**TYPES[1], "brand_short": ""}, {**TYPES[3], "variants": []}])
    assert sorted((r.record_id, r.reason) for r in result.rejects) == [
        ("mi350x-24c-nr", "instance type 'mi350x-24c-nr' has no variants"),
        ("rtx59-16c-nr.1", "brand_short is not a GPU name: ''"),
    ]


@pytest.mark.parametrize("body", [b"[]", b'{"data": {}}', b'{"data": {"instance_types": {}}}'])
def test_an_answer_without_its_instance_type_list_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="cloudrift"):
        cloudrift.parse(body, OBSERVED_AT)
