"""Hot Aisle's pricing page (recorded: tests/fixtures/hotaisle_pricing.html, its plan cards)."""

from __future__ import annotations

import orjson
import pytest

from scrapers import MissingCredentialsError, Pricing, ProviderPayloadError, hotaisle
from scrapers.base import Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("hotaisle_pricing.html")


def offers_by_id(body: bytes = BODY):
    return {o.offer_id: o for o in hotaisle.parse(body, OBSERVED_AT).offers}


def test_the_vm_cards_give_1_2_and_4_gpu_mi300x_vms_at_the_per_gpu_price():
    offers = offers_by_id()
    prices = {oid: (o.gpu_count, o.price_per_gpu_hour, o.price_per_hour)
              for oid, o in offers.items()}  # fmt: skip
    assert prices == {"vm-small-1x-mi300x": (1, 2.99, 2.99), "vm-medium-2x-mi300x": (2, 2.99, 5.98),
                      "vm-medium-4x-mi300x": (4, 2.99, 11.96)}  # fmt: skip
    assert {(o.pricing, o.price_quoted_per, o.gpu_raw) for o in offers.values()} == {
        (Pricing.ON_DEMAND, "gpu", "MI300x")
    }


def test_bare_metal_with_a_one_month_minimum_is_rejected_not_an_hourly_offer():
    [reject] = hotaisle.parse(BODY, OBSERVED_AT).rejects
    assert reject.record_id == "bare-metal-large"
    assert "minimum term ('one-month minimum'): not an hourly offer" in reject.reason
    assert "$3.39/GPU/hr" in reject.raw


def test_the_grandfathered_rate_and_summary_boxes_are_not_offers():
    assert not any(o.price_per_gpu_hour == 1.99 for o in offers_by_id().values())
    assert len(offers_by_id()) == 3


def test_specs_follow_the_counts_in_order_and_vram_is_per_gpu():
    offers = offers_by_id()
    two, four = offers["vm-medium-2x-mi300x"], offers["vm-medium-4x-mi300x"]
    assert (two.ram_gb, four.ram_gb) == (448, 896)
    assert (two.vram_gb, four.vram_gb) == (192, 192)  # 384 and 768 GB of HBM3 in all
    assert offers["vm-small-1x-mi300x"].disk_gb == 12_000  # 12TB NVMe
    assert offers["vm-small-1x-mi300x"].vcpus is None  # CPU cores are not vCPUs


def test_a_vm_card_that_gains_a_minimum_term_is_rejected_too():
    body = BODY.replace(b"Ideal for experimentation and development.", b"Three-month minimum.")
    result = hotaisle.parse(body, OBSERVED_AT)
    assert {r.record_id for r in result.rejects} == {"vm-small", "bare-metal-large"}
    assert "vm-small-1x-mi300x" not in offers_by_id(body)


@pytest.mark.parametrize("note", [b"Billed by the minute, no minimum.", b"Minimum of nothing."])
def test_a_card_that_says_no_minimum_term_stays_an_hourly_offer(note):
    body = BODY.replace(b"Ideal for experimentation and development.", note)
    assert "vm-small-1x-mi300x" in offers_by_id(body)


def test_a_card_without_a_count_and_model_is_rejected_with_its_reason():
    body = BODY.replace(b"<span>1x</span>", b"<span>one</span>")
    result = hotaisle.parse(body, OBSERVED_AT)
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert reasons["vm-small"] == "card states no GPU count and model like '1x MI300x'"


def test_a_page_whose_only_cards_have_minimum_terms_is_a_payload_error():
    body = BODY.replace(b"Ideal for experimentation", b"One-month minimum").replace(
        b"For model fine-tuning", b"One-month minimum"
    )
    with pytest.raises(ProviderPayloadError, match="none an hourly offer"):
        hotaisle.parse(body, OBSERVED_AT)


# the API (with HOTAISLE_API_KEY and HOTAISLE_TEAM_HANDLE): gpuhunt's test VM, a 2-GPU VM built
# alike, and the first listed again

AVAILABLE = fixture_bytes("hotaisle_available.json")


def test_each_available_vm_shape_is_one_on_demand_offer_in_michigan_available_now():
    result = hotaisle.parse(AVAILABLE, OBSERVED_AT)
    assert result.rejects == []
    offers = {o.offer_id: o for o in result.offers}
    assert sorted(offers) == ["1x-mi300x-13c-240gb-12288gb@us-michigan-1",
                              "2x-mi300x-26c-480gb-24576gb@us-michigan-1"]  # fmt: skip
    one = offers["1x-mi300x-13c-240gb-12288gb@us-michigan-1"]
    assert (one.gpu_raw, one.gpu_count, one.price_per_hour, one.price_quoted_per) == (
        "MI300X", 1, 1.99, "instance"
    )  # fmt: skip
    assert (one.ram_gb, one.disk_gb, one.vcpus, one.region, one.available) == (
        240.0, 12288.0, None, "us-michigan-1", True
    )  # fmt: skip
    two = offers["2x-mi300x-26c-480gb-24576gb@us-michigan-1"]
    assert two.price_per_gpu_hour == pytest.approx(1.99)  # cents per VM, per GPU derived


def test_null_means_no_vm_can_be_created_now_no_offers_and_no_error():
    result = hotaisle.parse(b"null", OBSERVED_AT)
    assert (result.offer_count, result.rejects) == (0, [])


def test_the_same_shape_at_another_price_is_a_reject():
    vms = orjson.loads(AVAILABLE)
    vms[2]["OnDemandPrice"] = 249
    result = hotaisle.parse(orjson.dumps(vms), OBSERVED_AT)
    assert [r.reason for r in result.rejects] == [
        "duplicate offer_id '1x-mi300x-13c-240gb-12288gb@us-michigan-1' (on_demand)"
    ]


def test_a_vm_with_two_gpu_models_or_none_is_a_reject():
    vms = orjson.loads(AVAILABLE)
    vms[1]["Specs"]["gpus"] = []
    result = hotaisle.parse(orjson.dumps(vms), OBSERVED_AT)
    assert len(result.rejects) == 1 and "must name one GPU model" in result.rejects[0].reason
    assert result.offer_count == 1


@pytest.mark.parametrize("body", [b"[", b'{"detail": "Not found"}'])
def test_an_answer_that_is_not_a_list_of_vms_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="hotaisle"):
        hotaisle.parse(body, OBSERVED_AT)


@pytest.mark.parametrize("team", ["", "../admin", "a b"], ids=["unset", "a-path", "a-space"])
def test_a_key_without_a_team_handle_is_a_configuration_error_naming_it(
    team, monkeypatch, client_factory
):
    monkeypatch.setenv(hotaisle.TEAM_ENV, team)
    with client_factory() as client, pytest.raises(MissingCredentialsError, match="TEAM_HANDLE"):
        hotaisle.fetch(client, Credentials("key"))
