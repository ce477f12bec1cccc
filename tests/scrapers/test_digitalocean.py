"""DigitalOcean's Droplet pricing docs page (recorded: tests/fixtures/digitalocean_pricing.html)."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from scrapers import Pricing, ProviderPayloadError, digitalocean
from scrapers.base import Credentials
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("digitalocean_pricing.html")


def offers_by_key(body: bytes = BODY):
    return {(o.offer_id, o.pricing): o for o in digitalocean.parse(body, OBSERVED_AT).offers}


def test_the_recorded_page_gives_its_11_on_demand_and_8_spot_rows_and_no_contract_row():
    result = digitalocean.parse(BODY, OBSERVED_AT)
    assert result.rejects == []
    pricings = [o.pricing for o in result.offers]
    assert (pricings.count(Pricing.ON_DEMAND), pricings.count(Pricing.SPOT)) == (11, 8)
    assert ("amd-mi350x", Pricing.ON_DEMAND) not in offers_by_key()  # per contract only


def test_a_single_gpu_row_is_a_per_gpu_price_and_an_8x_row_the_whole_node():
    offers = offers_by_key()
    one = offers[("amd-mi300x", Pricing.ON_DEMAND)]
    node = offers[("amd-mi300x-8x", Pricing.ON_DEMAND)]
    assert (one.gpu_count, one.price_quoted_per, one.price_per_gpu_hour) == (1, "gpu", 2.59)
    assert (node.gpu_count, node.price_quoted_per, node.price_per_hour) == (8, "instance", 20.72)
    assert node.price_per_gpu_hour == pytest.approx(2.59)
    assert one.gpu_raw == node.gpu_raw == "AMD MI300X"


def test_spot_rows_come_from_the_spot_table_apart_from_on_demand():
    offers = offers_by_key()
    assert offers[("amd-mi355x-8x", Pricing.SPOT)].price_per_hour == pytest.approx(36.0)
    assert offers[("amd-mi350x", Pricing.SPOT)].price_per_gpu_hour == pytest.approx(4.0)
    assert not any(pricing == Pricing.SPOT for (oid, pricing) in offers if oid == "nvidia-h100")


def test_the_cooling_of_a_b300_plan_is_its_tier_and_the_board_stays_b300():
    air = offers_by_key()[("nvidia-b300-air-cooled-8x", Pricing.SPOT)]
    liquid = offers_by_key()[("nvidia-b300-liquid-cooled", Pricing.SPOT)]
    assert (air.gpu_raw, air.tier, air.gpu_count) == ("NVIDIA B300", "air-cooled", 8)
    assert (liquid.gpu_raw, liquid.tier) == ("NVIDIA B300", "liquid-cooled")


def test_short_board_names_are_the_ada_cards_and_the_h100_its_80gb_part():
    raw = {oid: o.gpu_raw for (oid, _), o in offers_by_key().items()}
    assert raw["nvidia-rtx-4000"] == "NVIDIA RTX 4000 Ada Generation"
    assert raw["nvidia-rtx-6000"] == "NVIDIA RTX 6000 Ada Generation"
    offers = offers_by_key()
    assert offers[("nvidia-h100-8x", Pricing.ON_DEMAND)].vram_gb == 80


def test_offers_are_listed_without_a_region():
    assert {(o.region, o.available) for o in offers_by_key().values()} == {(None, True)}


def test_columns_are_found_by_their_labels_not_their_positions():
    swapped = BODY.replace(
        b"<th>GPU</th>\n          <th>Price</th>", b"<th>Price</th>\n          <th>GPU</th>", 1
    )
    row = b"<td>AMD MI300X</td>\n          <td>$2.59 per hour</td>"
    swapped = swapped.replace(row, b"<td>$2.59 per hour</td>\n          <td>AMD MI300X</td>")
    offer = offers_by_key(swapped)[("amd-mi300x", Pricing.ON_DEMAND)]
    assert offer.price_per_gpu_hour == pytest.approx(2.59)


def test_a_malformed_price_is_rejected_with_its_reason_and_the_rest_kept():
    body = BODY.replace(b"<td>$4.41 per hour</td>", b"<td>\xe2\x82\xac4.41 per hour</td>")
    result = digitalocean.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "nvidia-h100" and "not a USD amount" in reject.reason
    assert "<td>NVIDIA H100</td>" in reject.raw
    assert result.offer_count == 18


def test_a_gpu_table_without_a_price_column_is_a_changed_layout():
    body = BODY.replace(b"<th>Price</th>", b"<th>Rate</th>")
    with pytest.raises(ProviderPayloadError, match="no GPU or price column"):
        digitalocean.parse(body, OBSERVED_AT)


def test_headings_renamed_so_no_gpu_price_table_is_found_is_a_payload_error():
    body = BODY.replace(b"GPU Droplet Pricing", b"Droplet Rates")
    with pytest.raises(ProviderPayloadError, match="no rows under an on-demand or spot GPU"):
        digitalocean.parse(body, OBSERVED_AT)


# the sizes API (with DIGITALOCEAN_TOKEN): gpuhunt's test answer plus two sizes built alike

SIZES = fixture_bytes("digitalocean_sizes.json")


def sizes_by_key():
    result = digitalocean.parse(SIZES, OBSERVED_AT)
    assert result.rejects == []
    return {o.offer_id: o for o in result.offers}


def test_the_sizes_api_gives_one_on_demand_offer_per_gpu_size_and_region_and_no_cpu_droplet():
    offers = sizes_by_key()
    assert sorted(offers) == ["gpu-h100x1-80gb@atl1", "gpu-h100x1-80gb@tor1",
                              "gpu-h100x8-640gb@nyc1", "gpu-mi300x1-192gb",
                              "gpu-mi300x8-1536gb@nyc1"]  # fmt: skip
    assert {o.pricing for o in offers.values()} == {Pricing.ON_DEMAND}  # the API has no spot


def test_price_hourly_is_per_droplet_and_vram_is_the_droplets_total():
    h100 = sizes_by_key()["gpu-h100x8-640gb@nyc1"]
    assert (h100.price_quoted_per, h100.price_per_hour, h100.gpu_count) == ("instance", 23.92, 8)
    assert h100.price_per_gpu_hour == pytest.approx(2.99)
    assert (h100.vram_gb, h100.vcpus, h100.ram_gb, h100.disk_gb) == (80.0, 160.0, 1920.0, 2046.0)
    assert sizes_by_key()["gpu-mi300x8-1536gb@nyc1"].vram_gb == 192.0


def test_a_listed_region_is_available_now_and_an_empty_region_list_is_not():
    offers = sizes_by_key()
    assert offers["gpu-h100x1-80gb@tor1"].available is True
    unplaced = offers["gpu-mi300x1-192gb"]
    assert (unplaced.region, unplaced.available) == (None, False)


def test_a_size_marked_unavailable_is_one_unavailable_offer_whatever_its_regions():
    data = orjson.loads(SIZES)
    data["sizes"][1]["available"] = False
    offers = {o.offer_id: o for o in digitalocean.parse(orjson.dumps(data), OBSERVED_AT).offers}
    assert offers["gpu-h100x8-640gb"].available is False
    assert "gpu-h100x8-640gb@nyc1" not in offers


def test_a_vram_unit_other_than_gib_is_a_reject():
    data = orjson.loads(SIZES)
    data["sizes"][1]["gpu_info"]["vram"]["unit"] = "mib"
    result = digitalocean.parse(orjson.dumps(data), OBSERVED_AT)
    assert [(r.record_id, r.reason) for r in result.rejects] == [
        ("gpu-h100x8-640gb", "gpu_info.vram unit 'mib' is not gib")
    ]


@pytest.mark.parametrize("body", [b'{"sizes": {}}', b'{"id": "unauthorized"}', b"{"])
def test_a_json_body_without_a_sizes_list_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="digitalocean"):
        digitalocean.parse(body, OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_the_sizes_api_is_read_page_by_page_following_links_pages_next(respx_mock, client_factory):
    data = orjson.loads(SIZES)
    second = "https://api.digitalocean.com/v2/sizes?page=2&per_page=500"
    first_page = {"sizes": data["sizes"][:2], "links": {"pages": {"next": second}}}
    respx_mock.get(second).mock(
        return_value=httpx.Response(200, json={"sizes": data["sizes"][2:], "links": {}})
    )
    respx_mock.get(digitalocean.API_URL).mock(return_value=httpx.Response(200, json=first_page))
    with client_factory() as client:
        body = digitalocean.fetch(client, Credentials("token"))
    assert orjson.loads(body) == {"sizes": data["sizes"]}


@respx.mock(assert_all_mocked=True)
def test_without_a_token_fetch_reads_the_docs_page_as_before(respx_mock, client_factory):
    route = respx_mock.get(digitalocean.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert digitalocean.fetch(client, None) == BODY
    assert "Authorization" not in route.calls.last.request.headers
