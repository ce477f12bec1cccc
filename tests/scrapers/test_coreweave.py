from __future__ import annotations

import re

import httpx
import pytest
import respx

from pipeline.collection.collect import run_collection
from scrapers import Pricing, ProviderHTTPError, ProviderPayloadError, coreweave
from scrapers.base import USER_AGENT
from tests.conftest import OBSERVED_AT, fixture_bytes

BODY = fixture_bytes("coreweave_pricing.html")
NA_H100 = "nvidia-hgx-h100-north-america"


def offers_by_key(body: bytes = BODY):
    result = coreweave.parse(body, OBSERVED_AT)
    return {(o.offer_id, o.pricing): o for o in result.offers}


def edited_row(product: str, old: bytes, new: bytes) -> bytes:
    """The recorded body with `old` replaced once, inside the first row of `data-product`."""
    start = BODY.index(f'data-product="{product}"'.encode())
    at = BODY.index(old, start)
    return BODY[:at] + new + BODY[at + len(old) :]


RTX_HIGH = "nvidia-rtx-pro-6000-blackwell-server-edition-high-memory"
RTX_STANDARD = "nvidia-rtx-pro-6000-blackwell-server-edition-standard-memory"


def test_the_2026_page_gives_all_34_on_demand_and_spot_offers_of_its_24_gpu_rows():
    offers = offers_by_key()
    assert len(offers) == 34
    by_region = {region: sum(o.region == region for o in offers.values())
                 for region in ("North America", "Europe")}  # fmt: skip
    assert by_region == {"North America": 18, "Europe": 16}
    on_demand = {offer_id for offer_id, pricing in offers if pricing == Pricing.ON_DEMAND}
    assert on_demand == {
        f"{model}-{region}"
        for model in ("nvidia-gb200-nvl72", "nvidia-hgx-b200", RTX_HIGH, "nvidia-hgx-h100",
                      "nvidia-hgx-h200", "nvidia-gh200", "nvidia-l40", "nvidia-l40s",
                      "nvidia-a100")
        for region in ("north-america", "europe")
    }  # fmt: skip


def test_hgx_h100_node_price_is_divided_by_its_eight_gpus():
    offer = offers_by_key()[(NA_H100, Pricing.ON_DEMAND)]
    assert offer.gpu_raw == "NVIDIA HGX H100"
    assert offer.gpu_count == 8
    assert offer.price_per_hour == pytest.approx(49.24)
    assert offer.price_per_gpu_hour == pytest.approx(6.155)
    assert offer.price_quoted_per == "instance"
    assert offer.gpu is None  # resolved later, in the pipeline


def test_footnote_superscript_in_gpu_count_is_stripped_before_reading_it():
    offer = offers_by_key()[("nvidia-gb200-nvl72-north-america", Pricing.ON_DEMAND)]
    assert offer.gpu_count == 4
    assert offer.price_per_gpu_hour == pytest.approx(10.50)


def test_spot_offer_is_the_spot_column_for_the_whole_node():
    offer = offers_by_key()[(NA_H100, Pricing.SPOT)]
    assert offer.price_per_hour == pytest.approx(19.71)
    assert offer.price_per_gpu_hour == pytest.approx(19.71 / 8)


def test_spot_offer_only_where_the_spot_cell_has_a_number():
    offers = offers_by_key()
    assert ("nvidia-gh200-north-america", Pricing.SPOT) not in offers
    assert ("nvidia-l40s-europe", Pricing.SPOT) not in offers
    assert ("nvidia-hgx-b300-north-america", Pricing.ON_DEMAND) not in offers
    assert offers[("nvidia-hgx-b300-north-america", Pricing.SPOT)].price_per_hour == 35.84


def test_rows_without_any_price_are_skipped_without_a_reject():
    result = coreweave.parse(BODY, OBSERVED_AT)
    assert not any(o.gpu_raw == "NVIDIA GB300 NVL72" for o in result.offers)
    assert result.rejects == []


def test_region_comes_from_the_label_before_each_table():
    offers = offers_by_key()
    europe = offers[("nvidia-hgx-h100-europe", Pricing.SPOT)]
    assert europe.region == "Europe"
    assert europe.price_per_hour == pytest.approx(19.51)
    assert offers[(NA_H100, Pricing.SPOT)].region == "North America"


def test_machine_specs_are_read_by_label_with_thousands_separators_and_tb_in_gb():
    offer = offers_by_key()[(NA_H100, Pricing.ON_DEMAND)]
    assert offer.vram_gb == 80
    assert offer.vcpus == 128
    assert offer.ram_gb == 2048
    assert offer.disk_gb == pytest.approx(61.44 * coreweave.GB_PER_TB)


def test_cells_follow_their_header_labels_not_their_positions():
    swapped = (
        BODY.replace(b">vCPUs</div>", b">@@</div>")
        .replace(b">System RAM (GB)</div>", b">vCPUs</div>")
        .replace(b">@@</div>", b">System RAM (GB)</div>")
    )
    offer = offers_by_key(swapped)[(NA_H100, Pricing.ON_DEMAND)]
    assert (offer.vcpus, offer.ram_gb) == (2048, 128)


def test_cpu_and_storage_rows_are_not_offers():
    raw_names = {o.gpu_raw for o in coreweave.parse(BODY, OBSERVED_AT).offers}
    assert all(name.startswith("NVIDIA ") for name in raw_names)


def test_inference_price_per_gpu_is_a_cross_check_not_an_offer():
    offers = offers_by_key()
    assert {pricing for _, pricing in offers} == {Pricing.ON_DEMAND, Pricing.SPOT}
    assert len([k for k in offers if k[0] == NA_H100]) == 2


def test_a_gpu_count_that_disagrees_with_the_inference_price_is_rejected():
    body = edited_row("nvidia-gb200-nvl72", b"<div>4<sup>1</sup></div>", b"<div>2</div>")
    result = coreweave.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == "nvidia-gb200-nvl72-north-america"
    assert "inference price $10.50 per GPU" in reject.reason
    assert 'data-product="nvidia-gb200-nvl72"' in reject.raw
    assert ("nvidia-gb200-nvl72-europe", Pricing.ON_DEMAND) in offers_by_key(body)


def test_a_malformed_price_is_rejected_with_its_reason_and_the_rest_kept():
    body = edited_row("nvidia-hgx-h100", b"<div>$49.24</div>", b"<div>$abc</div>")
    result = coreweave.parse(body, OBSERVED_AT)
    [reject] = result.rejects
    assert reject.record_id == NA_H100
    assert "on_demand price '$abc'" in reject.reason
    kept = {o.offer_id for o in result.offers}
    assert NA_H100 not in kept  # the row's spot offer goes with it
    assert len(kept) == len({k[0] for k in offers_by_key()}) - 1


def test_a_price_in_another_currency_is_rejected():
    body = edited_row("nvidia-hgx-h100", b"<div>$49.24</div>", b"<div>\xe2\x82\xac49.24</div>")
    [reject] = coreweave.parse(body, OBSERVED_AT).rejects
    assert "not a USD amount" in reject.reason


def test_a_row_whose_cells_do_not_match_the_labels_is_rejected():
    body = edited_row("nvidia-hgx-h100", b'<div class="table-v2-cell"><div>80</div></div>', b"")
    [reject] = coreweave.parse(body, OBSERVED_AT).rejects
    assert reject.reason == "row has 8 cells for 9 column labels"


@pytest.mark.parametrize(
    ("on_demand", "spot", "inference"),
    [
        ("ON-DEMAND PRICE", "Spot price*", "Inference Single GPU Price"),
        ("On Demand Price (per hour)\u00b9", "Spot Price<sup>3</sup>", "inference price\u00b2"),
        ("On-Demand Price", "Spot Price", "Inference Single GPU Price(Per Hour)"),
    ],
    ids=["case-and-marks", "footnotes-anywhere", "older-labels"],
)
def test_price_columns_are_found_by_meaning_not_exact_text(on_demand, spot, inference):
    body = (
        BODY.replace(b">On-Demand Price (Per Hour)<", f">{on_demand}<".encode())
        .replace(b">Spot Price (Per Hour)<", f">{spot}<".encode())
        .replace(b">Inference Single GPU Price(Per Hour)<sup>2</sup><", f">{inference}<".encode())
    )
    assert offers_by_key(body) == offers_by_key()


def test_footnote_marks_are_stripped_wherever_they_sit():
    body = edited_row("nvidia-gb200-nvl72", b"<div>4<sup>1</sup></div>", b"<div>4\xc2\xb9</div>")
    body = body.replace(b"<div>$42.00</div>", b"<div>$42.00<sup>4</sup></div>", 1)
    offer = offers_by_key(body)[("nvidia-gb200-nvl72-north-america", Pricing.ON_DEMAND)]
    assert (offer.gpu_count, offer.price_per_hour) == (4, 42.0)


def test_contact_sales_or_na_gives_no_offer_for_that_column_and_the_other_prices_stay():
    offers = offers_by_key()
    assert b">Contact sales</a>" in BODY
    b300 = "nvidia-hgx-b300-north-america"
    assert (b300, Pricing.ON_DEMAND) not in offers  # Contact sales
    assert offers[(b300, Pricing.SPOT)].price_per_hour == pytest.approx(35.84)
    assert ("nvidia-gh200-europe", Pricing.SPOT) not in offers  # N/A
    assert offers[("nvidia-gh200-europe", Pricing.ON_DEMAND)].price_per_hour == 6.5


def test_variants_of_one_model_in_one_region_keep_their_spelling_and_distinct_ids():
    offers = offers_by_key()
    high = offers[(f"{RTX_HIGH}-north-america", Pricing.SPOT)]
    standard = offers[(f"{RTX_STANDARD}-north-america", Pricing.SPOT)]
    assert high.gpu_raw == "NVIDIA RTX PRO 6000 Blackwell Server Edition (High Memory)"
    assert standard.gpu_raw == "NVIDIA RTX PRO 6000 Blackwell Server Edition (Standard Memory)"
    assert (high.ram_gb, standard.ram_gb) == (1024, 512)
    assert (f"{RTX_STANDARD}-north-america", Pricing.ON_DEMAND) not in offers  # Contact sales


def test_rows_whose_names_collide_get_their_differing_columns_in_the_offer_id():
    body = BODY.replace(b" (High Memory)<", b"<").replace(b" (Standard Memory)<", b"<")
    result = coreweave.parse(body, OBSERVED_AT)
    assert result.rejects == [] and result.offer_count == 34
    ids = {o.offer_id for o in result.offers if o.gpu_raw.endswith("Server Edition")}
    model = "nvidia-rtx-pro-6000-blackwell-server-edition"
    assert ids == {f"{model}-{region}-ram-{ram}" for region in ("north-america", "europe")
                   for ram in ("1-024", "512")}  # fmt: skip


def test_the_pages_vram_is_kept_as_printed():
    offer = offers_by_key()[("nvidia-hgx-b300-europe", Pricing.SPOT)]
    assert offer.vram_gb == 270


def test_a_gpu_table_without_on_demand_or_spot_columns_is_an_old_layout_payload_error():
    old = BODY.replace(b">On-Demand Price (Per Hour)<", b">Instance Price (Per Hour)<").replace(
        b">Spot Price (Per Hour)<", b">Reserved Price<"
    )
    with pytest.raises(ProviderPayloadError, match="no on-demand or spot price column.*Instance"):
        coreweave.parse(old, OBSERVED_AT)


def test_the_failure_message_counts_every_gpu_row_of_the_page():
    unpriced = re.sub(rb"<div>\$[\d.,]+</div>", b"<div>N/A</div>", BODY)
    with pytest.raises(ProviderPayloadError, match="24 GPU rows, none with a price"):
        coreweave.parse(unpriced, OBSERVED_AT)


def test_a_page_cut_mid_table_is_a_payload_error_not_fewer_rows():
    truncated = BODY[: BODY.index(b'data-product="nvidia-hgx-h200"')]
    with pytest.raises(ProviderPayloadError, match="truncated"):
        coreweave.parse(truncated, OBSERVED_AT)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (BODY.replace(b"table-row-v2", b"pricing-row"), "no GPU rows"),
        (BODY.replace(b">GPU Model<", b">Instance<"), "no GPU rows"),
        (b'<html><body><p>{"error": "blocked"}</p></body></html>', "no GPU rows"),
        (re.sub(rb"<div>\$[\d.,]+</div>", b"<div>N/A</div>", BODY), "none with a price"),
        (BODY.replace(b"<div>$", b"<div>$x"), "none usable"),
    ],
    ids=["row class renamed", "header label renamed", "not the page", "no prices", "all bad"],
)
def test_a_page_on_which_no_gpu_row_parses_is_a_markup_changed_error(body, reason):
    with pytest.raises(ProviderPayloadError, match=f"{reason}.*markup changed"):
        coreweave.parse(body, OBSERVED_AT)


@respx.mock(assert_all_mocked=True)
def test_fetch_gets_the_page_as_html_with_our_user_agent(respx_mock, client_factory):
    route = respx_mock.get(coreweave.URL).mock(return_value=httpx.Response(200, content=BODY))
    with client_factory() as client:
        assert coreweave.fetch(client, None) == BODY
    request = route.calls.last.request
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["Accept"] == "text/html"
    assert "Authorization" not in request.headers


@pytest.mark.parametrize("status", [401, 403])
@respx.mock(assert_all_mocked=True)
def test_fetch_refused_by_the_site_is_an_http_error_without_retries(
    respx_mock, client_factory, status
):
    route = respx_mock.get(coreweave.URL).mock(return_value=httpx.Response(status))
    with client_factory() as client, pytest.raises(ProviderHTTPError, match=f"HTTP {status}"):
        coreweave.fetch(client, None)
    assert route.call_count == 1


@respx.mock(assert_all_mocked=True)
def test_fetch_waits_as_long_as_retry_after_says_on_429(respx_mock, client_factory):
    respx_mock.get(coreweave.URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "5"}),
            httpx.Response(200, content=BODY),
        ]
    )
    with client_factory() as client:
        assert coreweave.fetch(client, None) == BODY
    assert client_factory.waits == [5.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_backs_off_on_429_without_retry_after_then_succeeds(respx_mock, client_factory):
    respx_mock.get(coreweave.URL).mock(
        side_effect=[httpx.Response(429), httpx.Response(200, content=BODY)]
    )
    with client_factory() as client:
        assert coreweave.fetch(client, None) == BODY
    assert client_factory.waits == [2.0]


@respx.mock(assert_all_mocked=True)
def test_fetch_retries_a_500_then_succeeds(respx_mock, client_factory):
    route = respx_mock.get(coreweave.URL).mock(
        side_effect=[httpx.Response(500), httpx.Response(200, content=BODY)]
    )
    with client_factory() as client:
        assert coreweave.fetch(client, None) == BODY
    assert route.call_count == 2


@respx.mock(assert_all_mocked=True)
def test_fetch_that_keeps_timing_out_is_an_http_error(respx_mock, client_factory):
    respx_mock.get(coreweave.URL).mock(side_effect=httpx.ConnectTimeout)
    with client_factory() as client, pytest.raises(ProviderHTTPError, match="timed out"):
        coreweave.fetch(client, None)


@respx.mock(assert_all_mocked=True)
def test_collection_run_stores_the_offers_with_canonical_gpus(
    respx_mock, warehouse, client_factory
):
    respx_mock.get(coreweave.URL).mock(return_value=httpx.Response(200, content=BODY))
    [report] = run_collection(
        ["coreweave"], warehouse, env={}, observed_at=OBSERVED_AT, client_factory=client_factory
    )
    assert (report.status, report.error, report.reject_count) == ("ok", None, 0)
    assert report.offer_count == len(offers_by_key())
    with warehouse.cursor() as cur:
        row = cur.execute(
            "SELECT gpu, form_factor, gpu_count, price_per_hour, price_per_gpu_hour "
            "FROM offer_observations WHERE offer_id = ? AND pricing = 'on_demand'",
            [NA_H100],
        ).fetchone()
        a100_gpus = cur.execute(
            "SELECT DISTINCT gpu FROM offer_observations WHERE gpu_raw = 'NVIDIA A100'"
        ).fetchall()
        b300_vram = cur.execute(
            "SELECT DISTINCT vram_gb FROM offer_observations WHERE gpu_raw = 'NVIDIA HGX B300'"
        ).fetchall()
    assert row == ("H100-80GB", "SXM", 8, pytest.approx(49.24), pytest.approx(6.155))
    assert a100_gpus == [("A100-80GB",)]
    assert b300_vram == [(270.0,)]  # the page's figure, not the catalog's nominal


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (BODY.replace(b"table-row-v2", b"pricing-row"), "markup changed"),
        (BODY[: BODY.index(b'data-product="nvidia-hgx-h200"')], "truncated"),
    ],
    ids=["markup changed", "truncated"],
)
@respx.mock(assert_all_mocked=True)
def test_collection_run_of_an_unparseable_page_fails_and_stores_no_offers(
    respx_mock, warehouse, client_factory, body, error
):
    respx_mock.get(coreweave.URL).mock(return_value=httpx.Response(200, content=body))
    [report] = run_collection(
        ["coreweave"], warehouse, env={}, observed_at=OBSERVED_AT, client_factory=client_factory
    )
    assert report.status == "failed" and error in (report.error or "")
    with warehouse.cursor() as cur:
        runs = cur.execute(
            "SELECT status, error, offer_count FROM collection_runs WHERE provider = 'coreweave'"
        ).fetchall()
        stored = cur.execute(
            "SELECT count(*) FROM offer_observations WHERE provider = 'coreweave'"
        ).fetchone()
    assert [(status, offers) for status, _, offers in runs] == [("failed", 0)]
    assert error in runs[0][1]
    assert stored == (0,)


LIVE = fixture_bytes("coreweave_pricing_live.html")
LIVE_41 = fixture_bytes("coreweave_pricing_live_41.html")


@pytest.mark.parametrize("body", [LIVE, LIVE_41], ids=["4^1", "41"])
def test_the_live_page_gives_gb200_nvl72_nodes_of_4_gpus_at_42_dollars_in_both_regions(body):
    result = coreweave.parse(body, OBSERVED_AT)
    gb200 = [o for o in result.offers if o.gpu_raw == "NVIDIA GB200 NVL72"]
    assert sorted(o.region for o in gb200) == ["Europe", "North America"]
    for offer in gb200:
        assert (offer.pricing, offer.gpu_count, offer.price_per_hour) == ("on_demand", 4, 42.0)
        assert offer.price_per_gpu_hour == pytest.approx(10.50)


@pytest.mark.parametrize("body", [LIVE, LIVE_41], ids=["4^1", "41"])
def test_unpriced_gb300_nvl72_rows_of_the_live_page_give_no_offer_and_no_reject(body):
    result = coreweave.parse(body, OBSERVED_AT)
    assert result.rejects == []
    assert not [o for o in result.offers if o.gpu_raw == "NVIDIA GB300 NVL72"]
    assert result.offer_count == 13  # 6 + 5 rows, B300 spot-only, GB300 unpriced


def test_a_count_glued_to_a_mark_the_page_does_not_define_is_rejected():
    body = LIVE_41.replace(b"<p><sup>1 </sup>Each instance", b"<p>Each instance")
    result = coreweave.parse(body, OBSERVED_AT)
    reasons = {r.record_id: r.reason for r in result.rejects}
    assert set(reasons) == {"nvidia-gb200-nvl72-north-america", "nvidia-gb200-nvl72-europe"}
    assert "'41' is more than a node holds (16)" in reasons["nvidia-gb200-nvl72-europe"]
