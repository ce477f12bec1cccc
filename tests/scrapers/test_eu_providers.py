"""Parsers and fetches of the European clouds and the ECB rate source (issue 23)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import httpx
import orjson
import pytest
import respx

from scrapers import (
    FormFactor,
    ProviderHTTPError,
    ProviderPayloadError,
    ecb,
    hetzner,
    ovhcloud,
    scaleway,
    verda,
)
from tests.conftest import FIXTURES, fixture_bytes

AT = datetime(2026, 11, 30, 12, tzinfo=UTC)


def by_key(result):
    return {(o.offer_id, o.pricing): o for o in result.offers}


def test_ecb_daily_file_gives_the_dollar_per_euro_of_its_date():
    rates = {(r.rate_date, r.currency): r.rate for r in ecb.parse_rates(
        fixture_bytes("ecb_eurofxref_daily.xml"))}  # fmt: skip
    assert rates[(date(2026, 11, 27), "USD")] == 1.1602
    assert rates[(date(2026, 11, 27), "GBP")] == 0.87685


def test_ecb_history_file_with_double_quotes_gives_every_day():
    rates = ecb.parse_rates(fixture_bytes("ecb_eurofxref_hist_90d.xml"))
    days = sorted({r.rate_date for r in rates if r.currency == "USD"})
    assert days == [date(2026, 11, 16), date(2026, 11, 26), date(2026, 11, 27)]


@pytest.mark.parametrize(
    "body",
    [b"not xml", b"<Envelope/>", b"<!DOCTYPE x [<!ENTITY a 'b'>]><x/>",
     b"<E xmlns='http://www.ecb.int/vocabulary/2002-08-01/eurofxref'><Cube><Cube time='2026-11-27'>"
     b"<Cube currency='USD' rate='-1'/></Cube></Cube></E>"],
)  # fmt: skip
def test_ecb_bad_answers_are_payload_errors(body):
    with pytest.raises(ProviderPayloadError):
        ecb.parse_rates(body)


def test_verda_collapses_repeated_rows_keeps_cc_apart_and_skips_cpu_and_clusters():
    result = verda.parse(fixture_bytes("verda_pricing.html"), AT)
    offers = by_key(result)
    assert result.rejects == []
    h100 = offers[("1x H100 SXM5 80GB", "on_demand")]
    assert (h100.gpu_raw, h100.form_factor, h100.gpu_count) == ("H100 SXM5 80GB", "SXM", 1)
    assert (h100.price_per_gpu_hour, h100.currency) == (2.29, "USD")
    assert offers[("1x H100 SXM5 80GB", "spot")].price_per_gpu_hour == 1.15
    cc = offers[("1x B300 CC SXM6 268GB", "on_demand")]
    assert (cc.gpu_raw, cc.tier, cc.vram_gb) == ("B300 SXM6 268GB", "confidential", 268.0)
    assert offers[("1x RTX PRO 6000 CC 96GB", "on_demand")].price_per_gpu_hour == 1.59
    assert not any("H200" in key[0] or key[0].strip() == "" for key in offers)
    assert len(offers) == 11


def test_verda_same_row_at_two_prices_rejects_the_second():
    again = {"@type": "Offer", "name": "1x L40S 48GB on-demand", "price": "0.99",
             "priceCurrency": "USD"}  # fmt: skip
    page = fixture_bytes("verda_pricing.html") + (
        b'<script type="application/ld+json">' + orjson.dumps(again) + b"</script>"
    )
    result = verda.parse(page, AT)
    assert [r.reason for r in result.rejects] == ["listed again at 0.99 (first at 0.91)"]


def test_verda_page_without_json_ld_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="ld\\+json"):
        verda.parse(b"<html><body>maintenance</body></html>", AT)


def scaleway_payload() -> bytes:
    with httpx.Client(transport=httpx.MockTransport(
            scaleway.replay_directory(FIXTURES / "scaleway_answers"))) as client:  # fmt: skip
        return scaleway.fetch(client, None)


def test_scaleway_gpu_types_per_zone_with_availability_and_form_factor():
    result = scaleway.parse(scaleway_payload(), AT)
    offers = by_key(result)
    pcie = offers[("H100-1-80G@fr-par-2", "on_demand")]
    assert (pcie.gpu_raw, pcie.form_factor, pcie.gpu_count, pcie.vram_gb) == (
        "H100-PCIe", FormFactor.PCIE, 1, 80.0)  # fmt: skip
    assert (pcie.price_per_hour, pcie.currency, pcie.available) == (2.73, "EUR", True)
    assert offers[("H100-2-80G@fr-par-2", "on_demand")].available  # scarce: can be created
    sxm = offers[("H100-SXM-8-80G@fr-par-2", "on_demand")]
    assert (sxm.form_factor, sxm.gpu_count, sxm.available) == (FormFactor.SXM, 8, False)
    assert offers[("B300-SXM-4-288G@fr-par-2", "on_demand")].price_per_gpu_hour == 6.98
    assert not offers[("H100-1-80G@pl-waw-2", "on_demand")].available  # shortage
    assert not any(key[0].startswith("POP2") for key in offers)  # a CPU type
    assert {o.region for o in result.offers} == {"fr-par-2", "pl-waw-2"}


@respx.mock(assert_all_mocked=True)
def test_scaleway_pages_until_an_empty_page_and_skips_zones_answering_404(
    respx_mock, client_factory
):
    short = {f"T{i}": {"gpu": 0} for i in range(scaleway.PER_PAGE - 10)}  # fewer than asked
    zone = scaleway.URL.format(zone="fr-par-2")
    pages = respx_mock.get(zone).mock(side_effect=[
        httpx.Response(200, json={"servers": short}),
        httpx.Response(200, json={"servers": {"L4-1-24G": {"gpu": 1}}}),
        httpx.Response(200, json={"servers": {}})])  # fmt: skip
    empty = httpx.Response(200, json={"servers": {}})
    respx_mock.get(f"{zone}/availability").mock(return_value=empty)
    respx_mock.get(url__regex=r".*/zones/(?!fr-par-2/).*").mock(return_value=httpx.Response(404))
    with client_factory() as client:
        body = orjson.loads(scaleway.fetch(client, None))
    assert list(body["zones"]) == ["fr-par-2"]
    assert len(body["zones"]["fr-par-2"]["servers"]) == scaleway.PER_PAGE - 10 + 1
    assert [c.request.url.params["page"] for c in pages.calls] == ["1", "2", "3"]


@respx.mock(assert_all_mocked=True)
def test_scaleway_stops_at_the_total_count_the_answer_states(respx_mock, client_factory):
    zone = scaleway.URL.format(zone="fr-par-2")
    pages = respx_mock.get(zone).mock(side_effect=[
        httpx.Response(200, json={"servers": {"A": {"gpu": 0}}, "total_count": 2}),
        httpx.Response(200, json={"servers": {"B": {"gpu": 0}}, "total_count": 2})])  # fmt: skip
    respx_mock.get(f"{zone}/availability").mock(
        return_value=httpx.Response(200, json={"servers": {}, "total_count": 0}))  # fmt: skip
    respx_mock.get(url__regex=r".*/zones/(?!fr-par-2/).*").mock(return_value=httpx.Response(404))
    with client_factory() as client:
        body = orjson.loads(scaleway.fetch(client, None))
    assert sorted(body["zones"]["fr-par-2"]["servers"]) == ["A", "B"]
    assert [c.request.url.params["page"] for c in pages.calls] == ["1", "2"]


def test_scaleway_replay_with_a_short_first_page_reads_the_second_page_too():
    """Recorded fr-par-2 pages (gpu-index): page 1 holds 18 types, page 2 three more."""
    replay = scaleway.replay_directory(FIXTURES / "scaleway_recorded_pages")
    with httpx.Client(transport=httpx.MockTransport(replay)) as client:
        result = scaleway.parse(scaleway.fetch(client, None), AT)
    offers = {o.offer_id: o for o in result.offers}
    assert len(offers) == 17 and result.rejects == []  # 16 of page 1 + RENDER-S of page 2
    render = offers["RENDER-S@fr-par-2"]
    assert (render.gpu_raw, render.gpu_count, render.price_per_hour) == ("P100", 1, 1.221)


@respx.mock(assert_all_mocked=True)
def test_scaleway_server_error_fails_the_fetch(respx_mock, client_factory):
    respx_mock.get(url__regex=r".*").mock(return_value=httpx.Response(403))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="HTTP 403"):
        scaleway.fetch(client, None)


def test_ovhcloud_keeps_hourly_gpu_flavors_whole_in_1e8_units_per_region():
    result = ovhcloud.parse(fixture_bytes("ovhcloud_catalog_fr.json"), AT)
    offers = by_key(result)
    h100 = offers[("h100-380@GRA11", "on_demand")]
    assert (h100.price_per_hour, h100.currency, h100.gpu_count, h100.vram_gb) == (
        2.8, "EUR", 1, 80)  # fmt: skip
    assert offers[("h100-1520", "on_demand")].price_per_gpu_hour == 2.8  # region unknown
    assert offers[("h100-1520", "on_demand")].region is None
    plans = {key[0].split("@")[0] for key in offers}
    assert "win-l40s-90" not in plans and "ai-deploy-l4" not in plans and "b3-8" not in plans
    assert offers[("rtx5000-28@UK1", "on_demand")].gpu_raw == "Quadro-RTX5000"


def test_ovhcloud_catalog_without_locale_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="currencyCode"):
        ovhcloud.parse(b'{"addons": []}', AT)


def test_hetzner_gex_servers_carry_setup_fee_and_monthly_cap_in_euros():
    offers = by_key(hetzner.parse(fixture_bytes("hetzner_live_data_prices.json"), AT))
    gex131 = offers[("GEX131@FSN1", "on_demand")]
    assert (gex131.gpu_raw, gex131.price_per_hour, gex131.currency) == (
        "RTX PRO 6000 Blackwell Max-Q", 2.4, "EUR")  # fmt: skip
    assert (gex131.setup_fee_native, gex131.price_per_month_native) == (1499.0, 1497.0)
    assert not offers[("GEX131@NBG1", "on_demand")].available  # inactive location
    assert offers[("GEX45@HEL1", "on_demand")].region == "HEL1"
    assert len(offers) == 4  # CLOUD_21 (an IPv4 address) is not a GPU server


def test_hetzner_feed_without_products_is_a_payload_error():
    with pytest.raises(ProviderPayloadError, match="products"):
        hetzner.parse(b'{"server": {}}', AT)


@pytest.mark.parametrize("module", [ecb, verda, ovhcloud, hetzner])
@pytest.mark.parametrize("status", [404, 500])
def test_single_answer_fetches_turn_http_errors_into_provider_errors(
    module, status, client_factory
):
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(module.URL).mock(return_value=httpx.Response(status))
        with client_factory() as client, pytest.raises(ProviderHTTPError, match=f"HTTP {status}"):
            module.fetch(client, None)


@pytest.mark.parametrize("module", [ecb, verda, ovhcloud, hetzner])
def test_single_answer_fetches_return_the_body(module, client_factory):
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(module.URL).mock(return_value=httpx.Response(200, content=b"body"))
        with client_factory() as client:
            assert module.fetch(client, None) == b"body"


def test_verda_recorded_page_gives_every_instance_gpu_and_nothing_else():
    """A recorded page (gpu-index, trimmed): instance rows kept, duplicates collapsed, CPU,
    instant-cluster, serverless and storage offers skipped."""
    result = verda.parse(fixture_bytes("verda_pricing_recorded.html"), AT)
    offers = by_key(result)
    assert result.rejects == []
    assert len(offers) == 30  # 16 instance rows (H100 listed twice) x on-demand and spot
    assert offers[("1x H100 SXM5 80GB", "on_demand")].price_per_gpu_hour == 3.25
    assert offers[("1x B300 CC SXM6 268GB", "spot")].price_per_gpu_hour == 3.825
    assert offers[("1x GB300 SXM6 288GB", "on_demand")].gpu_raw == "GB300 SXM6 288GB"
    assert not any("serverless" in key[0] or "cluster" in key[0] for key in offers)


def test_scaleway_recorded_answers_give_every_gpu_type_with_its_stock():
    """Recorded fr-par-2 answers (gpu-index, trimmed to the fields read)."""
    with httpx.Client(transport=httpx.MockTransport(
            scaleway.replay_directory(FIXTURES / "scaleway_recorded"))) as client:  # fmt: skip
        result = scaleway.parse(scaleway.fetch(client, None), AT)
    offers = {o.offer_id.split("@")[0]: o for o in result.offers}
    assert len(offers) == 16 and result.rejects == []  # 18 types, 2 of them CPU-only
    b300 = offers["B300-SXM-8-288G"]
    assert (b300.gpu_count, b300.vram_gb, b300.price_per_hour, b300.available) == (
        8, 288.0, 60.0, False)  # fmt: skip
    assert (offers["H100-1-80G"].form_factor, offers["H100-1-80G"].available) == ("PCIe", True)
    assert offers["H100-SXM-2-80G"].price_per_gpu_hour == pytest.approx(3.3099)
    assert not offers["L40S-4-48G"].available  # shortage
