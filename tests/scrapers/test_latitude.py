"""Latitude.sh's GPU plans (tests/fixtures/latitude_plans.json: a real recorded plan record plus
GPU plans built in its shape, see tests/fixtures/README.md). Fetch errors, the key and the CLI
are in test_keyed_endpoints.py."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.location import get_locator
from scrapers import Pricing, ProviderPayloadError, latitude
from scrapers.base import Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("latitude_plans.json")
ANSWER = orjson.loads(BODY)
CPU_PLAN, L40S, H100, PRO6000 = ANSWER["data"]


def parsed(plans, **top):
    return latitude.parse(orjson.dumps({**ANSWER, "data": plans, **top}), OBSERVED_AT)


def by_id(plans=ANSWER["data"]):
    return {o.offer_id: o for o in parsed(plans).offers}


def edited(plan, **specs):
    attributes = plan["attributes"]
    return {**plan, "attributes": {**attributes, "specs": {**attributes["specs"], **specs}}}


def test_one_offer_per_gpu_plan_and_deployable_site_and_none_for_the_cpu_plan():
    result = latitude.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    assert sorted(by_id()) == [
        "g3-h100-large@DAL",
        "g3-h100-large@FRA",
        "g3-l40s-small@DAL",
        "g3-l40s-small@NYC",
        "g3-l40s-small@SAO2",
        "g3-rtx-pro-6000-small@ASH",
    ]  # fmt: skip  (c2-small-x86, the recorded CPU plan, has gpu: {})


def test_the_hourly_price_is_for_the_whole_server_per_region():
    offers = by_id()
    dallas, frankfurt = offers["g3-h100-large@DAL"], offers["g3-h100-large@FRA"]
    assert (dallas.price_quoted_per, dallas.gpu_count, dallas.price_per_hour) == (
        "instance",
        8,
        23.92,
    )
    assert dallas.price_per_gpu_hour == pytest.approx(2.99)
    assert frankfurt.price_per_hour == 25.6  # Germany's own USD price
    assert {o.pricing for o in offers.values()} == {Pricing.ON_DEMAND}


def test_a_site_is_available_when_in_stock_and_listed_not_available_when_only_deployable():
    offers = by_id()
    assert offers["g3-l40s-small@DAL"].available is True
    assert offers["g3-l40s-small@NYC"].available is False  # in `available`, not `in_stock`
    assert offers["g3-h100-large@FRA"].available is False


def test_a_region_without_a_usd_hourly_price_gives_no_offer():
    assert not [k for k in by_id() if k.endswith("@TYO3")]  # Japan: BRL only in the recording


def test_specs_give_vcpus_ram_disk_and_vram_per_gpu():
    h100 = by_id()["g3-h100-large@DAL"]
    assert (h100.vcpus, h100.ram_gb, h100.disk_gb, h100.vram_gb) == (96, 2048, 7600, 80)
    catalog = get_catalog()
    for offer in by_id().values():
        assert catalog.resolve(offer.gpu_raw, offer.vram_gb).gpu is not None, offer.gpu_raw


def test_sites_are_placed_by_their_slug():
    locator = get_locator()
    expected = {"DAL": "US", "MIA2": "US", "FRA": "DE", "SAO2": "BR", "TYO3": "JP", "LON2": "GB"}
    assert {site: locator.locate("latitude", site).country for site in expected} == expected


def test_a_next_page_is_a_payload_error_never_fewer_offers():
    with pytest.raises(ProviderPayloadError, match="next page"):
        parsed([L40S], links={"next": "https://api.latitude.sh/plans?page[number]=2"})


@pytest.mark.parametrize(
    ("plan", "reason"),
    [(edited(L40S, gpu={"count": 1}), "missing field 'type'"),
     (edited(L40S, gpu={"count": "one", "type": "NVIDIA L40S"}), "gpu.count is not a whole"),
     (edited(L40S, drives=[{"count": 1, "size": "lots"}]), "drive size 'lots'"),
     ({**L40S, "attributes": {**L40S["attributes"], "slug": ""}}, "slug is not a non-empty")],
)  # fmt: skip
def test_a_malformed_plan_is_rejected_with_its_reason_and_the_rest_kept(plan, reason):
    result = parsed([plan, PRO6000])
    [reject] = result.rejects
    assert reason in reject.reason
    assert [o.offer_id for o in result.offers] == ["g3-rtx-pro-6000-small@ASH"]


@respx.mock(assert_all_mocked=True)
def test_fetch_asks_for_gpu_plans_only(respx_mock, client_factory):
    route = respx_mock.get(latitude.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        latitude.fetch(client, Credentials("key"))
    assert route.calls.last.request.url.params["filter[gpu]"] == "true"
