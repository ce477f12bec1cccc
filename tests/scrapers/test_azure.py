"""Azure: Retail Prices API pages parsed from recordings; paging and failures mocked."""

from __future__ import annotations

import httpx
import orjson
import pytest
import respx

from pipeline.catalog import get_catalog
from pipeline.collection.normalize import normalize
from scrapers import ProviderHTTPError, ProviderPayloadError, azure
from scrapers.base import REPLAY_HEADER, build_client
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

PAGE1 = fixture_bytes("azure_answers/page-1.json")
PAGE2 = fixture_bytes("azure_answers/page-2.json")
H100 = "Standard_ND96isr_H100_v5"


def offers(payload):
    return {(o.offer_id, o.pricing): o for o in azure.parse(payload, OBSERVED_AT).offers}


def test_nd_h100_v5_is_eight_h100_sxm_on_demand_and_spot_where_a_spot_meter_exists():
    found = offers(PAGE1)
    on_demand = found[(f"{H100}@eastus", "on_demand")]
    assert (on_demand.gpu_raw, on_demand.gpu_count, on_demand.form_factor) == ("H100", 8, "SXM")
    assert on_demand.price_per_hour == 98.32
    assert on_demand.price_per_gpu_hour == pytest.approx(12.29)
    assert on_demand.available is True
    assert found[(f"{H100}@eastus", "spot")].price_per_hour == pytest.approx(18.169536)
    assert (f"{H100}@swedencentral", "spot") not in found  # no Spot meter there


def test_windows_low_priority_and_reservation_rows_are_not_on_demand_offers():
    prices = {o.price_per_hour for o in offers(PAGE1).values()}
    assert not prices & {102.736, 132.232, 41.094, 604884.0}
    assert azure.parse(PAGE1, OBSERVED_AT).rejects == []  # other products: skipped, not rejects


def test_european_regions_are_marked_eea_after_placing():
    table = normalize(azure.parse(PAGE1, OBSERVED_AT), get_catalog()).offers
    placed = {(o.region, o.country, o.eea) for o in table}
    assert ("westeurope", "NL", True) in placed and ("swedencentral", "SE", True) in placed
    assert ("eastus", "US", False) in placed


def test_fractional_sizes_fpgas_and_ended_rows_give_no_offer():
    result = azure.parse(PAGE2, OBSERVED_AT)
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert "fraction of one A10" in reasons["Standard_NV6ads_A10_v5@westeurope"]
    assert reasons["Standard_NP10s@eastus"] == "Standard_NP10s carries Xilinx U250, not a GPU"
    ids = {o.offer_id for o in result.offers}
    assert "Standard_NC6s_v3@eastus" not in ids  # its effectiveEndDate has passed
    assert "Standard_NV36ads_A10_v5@westeurope" in ids  # one whole A10


def test_an_n_series_size_missing_from_the_table_is_a_reject_naming_the_table():
    body = orjson.loads(PAGE1)
    body["Items"][0]["armSkuName"] = "Standard_ND999_Z1_v9"
    (reject,) = azure.parse(orjson.dumps(body), OBSERVED_AT).rejects
    assert "azure_vm_sizes.csv" in reject.reason


@pytest.mark.parametrize("body", [PAGE1[:-40], b"<html>busy</html>", b'{"Items": 3}'])
def test_a_truncated_or_foreign_page_is_a_payload_error(body):
    with pytest.raises(ProviderPayloadError, match="azure: page 1"):
        azure.parse(body, OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_fetch_follows_next_page_links_through_a_429(respx_mock, client_factory):
    first = respx_mock.get(azure.URL, params={"$filter": azure.FILTER}).mock(
        side_effect=[httpx.Response(429), httpx.Response(200, content=PAGE1)]
    )
    second = respx_mock.get(url__regex=r"\$skip=1000").mock(
        return_value=httpx.Response(200, content=PAGE2)
    )
    with client_factory() as client:
        result = azure.parse(azure.fetch(client, None), OBSERVED_AT)
    assert first.call_count == 2 and second.call_count == 1
    assert (f"{H100}@westeurope", "on_demand") in {(o.offer_id, o.pricing) for o in result.offers}
    assert "Standard_NC24ads_A100_v4@germanywestcentral" in {o.offer_id for o in result.offers}


@respx.mock(assert_all_mocked=True)
def test_a_page_failing_past_the_retries_fails_the_fetch(respx_mock, client_factory):
    respx_mock.get(azure.URL, params={"$filter": azure.FILTER}).mock(
        return_value=httpx.Response(200, content=PAGE1)
    )
    respx_mock.get(url__regex=r"\$skip=1000").mock(return_value=httpx.Response(502))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 502"):
        azure.fetch(client, None)


@respx.mock(assert_all_mocked=True)
def test_a_truncated_page_in_the_listing_fails_the_fetch(respx_mock, client_factory):
    respx_mock.get(azure.URL, params={"$filter": azure.FILTER}).mock(
        return_value=httpx.Response(200, content=PAGE1[:100])
    )
    with client_factory() as client, pytest.raises(ProviderPayloadError, match="not JSON"):
        azure.fetch(client, None)


def test_a_replayed_page_ends_the_listing():
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=PAGE1)

    with build_client(httpx.MockTransport(answer)) as client:
        client.headers[REPLAY_HEADER] = "1"
        azure.fetch(client, None)
    assert len(seen) == 1


def test_a_directory_of_pages_replays_every_page():
    with build_client(httpx.MockTransport(azure.replay_directory(FIXTURES / "azure_answers"))) \
            as client:  # fmt: skip
        result = azure.parse(azure.fetch(client, None), OBSERVED_AT)
    assert {o.region for o in result.offers} >= {"eastus", "westeurope", "germanywestcentral"}
