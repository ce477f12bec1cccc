"""Seeweb's plans joined with what can be created now (tests/fixtures/seeweb_plans.json: built in
the documented shape, see tests/fixtures/README.md). Fetch errors, the key and the CLI are in
test_keyed_endpoints.py."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.location import get_locator
from scrapers import Pricing, ProviderPayloadError, seeweb
from scrapers.base import Credentials
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("seeweb_plans.json")
JOINED = orjson.loads(BODY)
PLANS = JOINED["plans"]["plans"]


def parsed(plans=PLANS, availables=None):
    body = {"plans": {"status": "ok", "plans": plans},
            "plans-availables": availables or JOINED["plans-availables"]}  # fmt: skip
    return seeweb.parse(orjson.dumps(body), OBSERVED_AT)


def by_id(plans=PLANS, availables=None):
    return {o.offer_id: o for o in parsed(plans, availables).offers}


def plan(name):
    [found] = [p for p in PLANS if p["name"] == name]
    return found


def test_one_offer_per_gpu_plan_and_region_and_none_for_cpu_or_accelerator_plans():
    result = seeweb.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    assert sorted(o.offer_id for o in result.offers) == [
        "ECS1GPU11@it-fr2",
        "ECS1GPU11@it-mi2",
        "ECS1GPU12@it-mi2",
        "ECS1GPU5@it-fr2",
        "ECS1GPU7@it-fr2",
        "ECS1GPU7@it-mi2",
        "ECS1GPU9@it-fr2",
        "ECS2GPU3@it-fr2",
    ]  # fmt: skip  (no eCS4: a CPU plan; no ECS1GPU20: a Tenstorrent card, not a GPU)


def test_a_plan_region_is_available_only_where_plans_availables_can_create_it():
    offers = by_id()
    assert offers["ECS1GPU7@it-fr2"].available is True
    assert offers["ECS1GPU7@it-mi2"].available is False  # listed in the plan, not creatable now
    assert offers["ECS1GPU9@it-fr2"].available is False  # MI300X: active, missing from availables
    assert offers["ECS1GPU11@it-mi2"].available is True
    assert offers["ECS1GPU11@it-fr2"].available is False


def test_an_active_plan_flag_is_not_capacity_and_an_inactive_plan_is_never_available():
    assert plan("ECS1GPU9")["available"] is True  # "active", yet nothing to create
    assert by_id()["ECS1GPU9@it-fr2"].available is False
    inactive = dict(plan("ECS1GPU7"), available=False)
    assert {o.available for o in by_id([inactive]).values()} == {False}
    availables = {"status": "ok", "plans": [{"name": "ECS1GPU7",
                  "region_available": [{"region": "it-mi2"}]}]}  # fmt: skip
    assert by_id([plan("ECS1GPU7")], availables)["ECS1GPU7@it-mi2"].available is True


def test_the_hourly_price_is_euros_for_the_whole_plan():
    a100 = by_id()["ECS2GPU3@it-fr2"]
    assert (a100.currency, a100.price_quoted_per, a100.gpu_count) == ("EUR", "instance", 2)
    assert (a100.price_per_hour, a100.price_per_gpu_hour) == (1.98, 0.99)
    assert seeweb.CURRENCY == "EUR" and {o.pricing for o in by_id().values()} == {Pricing.ON_DEMAND}


def test_specs_are_digit_strings_with_ram_in_mb_and_vram_from_the_label():
    l40s = by_id()["ECS1GPU7@it-fr2"]
    assert (l40s.gpu_raw, l40s.vram_gb, l40s.vcpus, l40s.ram_gb, l40s.disk_gb) == (
        "L40s 48GB",
        48,
        8,
        32,
        500,
    )
    assert by_id()["ECS1GPU9@it-fr2"].vram_gb is None  # "MI300X": the catalog's size


def test_every_gpu_label_resolves_in_the_catalog():
    catalog = get_catalog()
    resolved = {o.gpu_raw: catalog.resolve(o.gpu_raw, o.vram_gb).gpu for o in by_id().values()}
    assert resolved == {"L40s 48GB": "L40S", "A100 80GB": "A100-80GB", "MI300X": "MI300X",
                        "H200 141GB": "H200-141GB", "RTX 6000 24GB": "Quadro RTX 6000",
                        "A30": "A30"}  # fmt: skip


def test_regions_are_in_italy():
    place = get_locator().locate("seeweb", "it-mi2")
    assert (place.country, place.eu, place.eea) == ("IT", True, True)


def test_a_plan_without_regions_is_one_unplaced_offer_not_available():
    [offer] = parsed([dict(plan("ECS1GPU7"), available_regions=[])]).offers
    assert (offer.offer_id, offer.region, offer.available) == ("ECS1GPU7", None, False)


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"gpu": "two"}, "gpu is not a whole number"),
     ({"hourly_price": "0,85"}, "hourly_price '0,85' is not a decimal number"),
     ({"ram": None}, "ram is not a whole number"),
     ({"available": "yes"}, "available is not true/false"),
     ({"available_regions": [{"id": 3}]}, "missing field 'location'")],
)  # fmt: skip
def test_a_malformed_plan_is_rejected_with_its_reason_and_the_rest_kept(change, reason):
    result = parsed([dict(plan("ECS1GPU7"), **change), plan("ECS2GPU3")])
    [reject] = result.rejects
    assert reason in reject.reason and reject.record_id == "ECS1GPU7"
    assert [o.offer_id for o in result.offers] == ["ECS2GPU3@it-fr2"]


def test_a_body_without_both_answers_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="joined /plans and /plans/availables"):
        seeweb.parse(orjson.dumps(JOINED["plans"]), OBSERVED_AT)
    with pytest.raises(ProviderPayloadError, match="the /plans/availables answer has no 'plans'"):
        seeweb.parse(orjson.dumps({**JOINED, "plans-availables": {"status": "ko"}}), OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_fetch_joins_the_two_answers_unchanged(respx_mock, client_factory):
    plans, availables = orjson.dumps(JOINED["plans"]), orjson.dumps(JOINED["plans-availables"])
    respx_mock.get(seeweb.URL).mock(return_value=httpx.Response(200, content=plans))
    respx_mock.get(seeweb.AVAILABLES_URL).mock(return_value=httpx.Response(200, content=availables))
    with client_factory() as client:
        body = orjson.loads(seeweb.fetch(client, Credentials("token")))
    assert body == JOINED


def test_a_replayed_recording_is_collected_once_in_euros_and_converted(warehouse):
    run_collection(["ecb"], warehouse, replays={"ecb": FIXTURES / "ecb_eurofxref_daily.xml"})
    [report] = run_collection(
        ["seeweb"], warehouse, replays={"seeweb": FIXTURES / "seeweb_plans.json"}
    )
    assert (report.status, report.offer_count) == ("ok", 8)
    with warehouse.cursor() as cur:
        currency, native, usd, rate = cur.execute(
            "SELECT currency, price_per_hour_native, price_per_hour, fx_rate "
            "FROM offer_observations WHERE offer_id = 'ECS2GPU3@it-fr2'"
        ).fetchone()
    assert (currency, native) == ("EUR", 1.98)
    assert usd == pytest.approx(1.98 * rate)
