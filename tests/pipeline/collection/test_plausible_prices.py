"""Implausible prices never stored (issue 46, finding 6): the band per GPU-hour from the catalog,
and wire-format ranges (GCP `nanos` and `units`, decimal strings) checked by the parsers."""

from __future__ import annotations

import copy

import orjson
import pytest

from pipeline.catalog import get_catalog
from pipeline.collection.collect import run_collection
from pipeline.collection.normalize import normalize
from pipeline.collection.plausible import PriceBand
from pipeline.market.offers import OfferQuery, current_offers
from scrapers import aws, azure, gcp, hetzner
from scrapers.batch import decimal, whole
from tests.conftest import FIXTURES, OBSERVED_AT, fixture_bytes

AZURE = orjson.loads(fixture_bytes("azure_answers/page-1.json"))
H100 = "Standard_ND96isr_H100_v5"


def _azure_with_prices(prices: dict[str, float]) -> bytes:
    body = copy.deepcopy(AZURE)
    for item in body["Items"]:
        key = f"{item['armSkuName']}@{item['armRegionName']}"
        if key in prices and item["type"] == "Consumption" and "Spot" not in item["meterName"]:
            item["retailPrice"] = prices[key]
    return orjson.dumps(body)


@pytest.mark.parametrize("price", [1e-320, 8 * 0.009, 8 * 401.0, 1e308])
def test_an_h100_priced_outside_a_cent_to_400_dollars_a_gpu_hour_is_a_reject(price):
    payload = _azure_with_prices({f"{H100}@eastus": price})
    result = normalize(azure.parse(payload, OBSERVED_AT), get_catalog())
    offer_ids = {(o.offer_id, o.pricing) for o in result.offers}
    assert (f"{H100}@eastus", "on_demand") not in offer_ids
    [reject] = [r for r in result.rejects if r.record_id == f"{H100}@eastus"]
    assert "outside the plausible band 0.01-400 USD for H100" in reject.reason
    assert (f"{H100}@westeurope", "on_demand") in offer_ids  # the others stay


@pytest.mark.parametrize("price", [8 * 0.011, 8 * 399.0])
def test_an_h100_inside_the_band_is_kept(price):
    payload = _azure_with_prices({f"{H100}@eastus": price})
    result = normalize(azure.parse(payload, OBSERVED_AT), get_catalog())
    assert (f"{H100}@eastus", "on_demand") in {(o.offer_id, o.pricing) for o in result.offers}


def test_the_band_of_a_gpu_without_vram_spans_the_catalogs_smallest_to_largest_memory():
    catalog = get_catalog()
    band = PriceBand(catalog)
    sizes = [v.vram_gb for v in catalog.variants]
    assert (band.smallest_vram_gb, band.largest_vram_gb) == (min(sizes), max(sizes))


def test_a_1e_minus_320_offer_is_never_the_cheapest_stored(warehouse, tmp_path):
    path = tmp_path / "azure.json"
    path.write_bytes(_azure_with_prices({f"{H100}@eastus": 1e-320}))
    [report] = run_collection(["azure"], warehouse, replays={"azure": path})
    assert report.status == "ok"
    assert any("plausible band" in r.reason for r in report.rejects)
    prices = [o["price_per_gpu_hour"] for o in current_offers(warehouse, OfferQuery())]
    assert prices and min(prices) > 0.01


def _gcp_with_unit_price(unit_price: dict) -> bytes:
    body = orjson.loads(fixture_bytes("gcp_skus/skus-1.json"))
    body["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"] = {
        "currencyCode": "USD",
        **unit_price,
    }
    return orjson.dumps(body)


@pytest.mark.parametrize(
    ("unit_price", "why"),
    [
        ({"units": "2", "nanos": 1_000_000_000}, "nanos from 0 to 999,999,999"),
        ({"units": "2", "nanos": -5}, "nanos from 0 to 999,999,999"),
        ({"units": 1e30, "nanos": 0}, "units is not a whole number"),
        ({"units": "1_000", "nanos": 0}, "units is not a whole number"),
        ({"units": "2", "nanos": 9.5e8}, "nanos is not a whole number"),
        ({"units": str(10**30), "nanos": 0}, "past a 64-bit integer"),
    ],
)
def test_a_gcp_unit_price_off_the_wire_format_is_a_reject_naming_it(unit_price, why):
    result = gcp.parse(_gcp_with_unit_price(unit_price), OBSERVED_AT)
    [reject] = [r for r in result.rejects if r.record_id == "039F-D0DA-4055"]
    assert why in reject.reason


@pytest.mark.parametrize("text", ["1_000", "inf", "nan", " 55.04", "1e400", "٥٥", "0x10"])
def test_an_aws_price_that_is_not_a_plain_decimal_is_a_reject(text):
    body = orjson.loads((FIXTURES / "aws_ondemand_us-east-1.json").read_bytes())
    entries = body["regions"]["US East (N. Virginia)"]
    entries["p5 48xlarge US East N. Virginia Linux"]["price"] = text
    result = aws.parse(orjson.dumps(body), OBSERVED_AT)
    [reject] = [r for r in result.rejects if r.record_id == "p5.48xlarge@us-east-1"]
    assert "not a decimal number" in reject.reason or "finite, normal" in reject.reason


def test_a_hetzner_price_with_an_underscore_is_a_reject():
    body = orjson.loads(fixture_bytes("hetzner_live_data_prices.json"))
    key = next(k for k in hetzner.PRODUCTS if body["products"].get(k))
    body["products"][key]["locations"][0]["prices"]["hourly"][hetzner.CURRENCY] = "1_0.5"
    result = hetzner.parse(orjson.dumps(body), OBSERVED_AT)
    assert any("is not a decimal number" in r.reason for r in result.rejects)


def test_decimal_and_whole_take_what_providers_write_and_nothing_else():
    assert decimal("p", "9.796550569") == pytest.approx(9.796550569)
    assert decimal("p", ".5") == 0.5 and decimal("p", "1.2e-3") == pytest.approx(0.0012)
    assert decimal("p", 3) == 3.0
    assert whole("n", "-12") == -12 and whole("n", 7) == 7
    for bad in ("1_000", "inf", "NaN", "", "+", "1e", "--1"):
        with pytest.raises(ValueError):
            decimal("p", bad)
    for bad_value in (True, None, [1]):
        with pytest.raises(TypeError):
            decimal("p", bad_value)
    with pytest.raises(ValueError, match="finite, normal"):
        decimal("p", 1e-320)
    for bad_whole in (2.0, True, "2.0", "1_0"):
        with pytest.raises(TypeError):
            whole("n", bad_whole)
