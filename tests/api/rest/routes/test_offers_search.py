"""Searching like a buyer: node filters, `gpu=H100:8`, sorts on any numeric field, the derived
price per PFLOP-hour and NVLink, and NDJSON, over recorded answers of all four providers."""

from __future__ import annotations

import csv
import io
import json
from unittest.mock import patch

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from warehouse.offers import SORT_FIELDS

EVERYTHING = {"include_unavailable": "true", "limit": 10_000}


@pytest.fixture
def client(search_market, db_path):
    app = create_app(Settings(db=db_path, scheduler=False), search_market)
    with TestClient(app) as test_client:
        yield test_client


def offers(client: TestClient, **params: object) -> list[dict]:
    response = client.get("/offers", params={**EVERYTHING, **params})
    assert response.status_code == 200, response.text
    return response.json()["offers"]


def keys(rows: list[dict]) -> set[tuple[str, str, str]]:
    return {(r["provider"], r["offer_id"], r["pricing"]) for r in rows}


@pytest.mark.parametrize("gpu", ["H100:8", "H100-80GB:8", "h100 : 8"])
def test_h100_8_lists_only_offers_of_exactly_eight_gpus(client, gpu):
    h100 = offers(client, gpu="H100")
    assert {r["gpu_count"] for r in h100} == {1, 2, 4, 8}
    got = offers(client, gpu=gpu)
    assert got and {r["gpu_count"] for r in got} == {8}
    assert keys(got) == keys([r for r in h100 if r["gpu_count"] == 8])
    assert got == offers(client, gpu="H100", gpu_count=8)


def test_min_gpu_count_keeps_offers_of_at_least_that_many(client):
    got = offers(client, gpu="H100", min_gpu_count=2)
    assert {r["gpu_count"] for r in got} == {2, 4, 8}


NODE_FILTERS = [
    ("min_vram_gb", 80, lambda r: r["vram_gb"] is not None and r["vram_gb"] >= 80),
    (
        "min_total_vram_gb",
        320,
        lambda r: r["vram_gb"] is not None and r["gpu_count"] * r["vram_gb"] >= 320,
    ),
    ("max_price_per_hour", 2.5, lambda r: r["price_per_hour"] <= 2.5),
    ("max_price_per_gpu", 1.0, lambda r: r["price_per_gpu_hour"] <= 1.0),
    ("min_reliability", 0.99, lambda r: r["reliability"] is not None and r["reliability"] >= 0.99),
    ("min_reliability", 0, lambda r: r["reliability"] is not None),
    ("verified", "true", lambda r: r["verified"] is True),
    ("nvlink", "true", lambda r: r["nvlink"] is True),
    ("min_vcpus", 64, lambda r: r["vcpus"] is not None and r["vcpus"] >= 64),
    ("min_ram_gb", 512, lambda r: r["ram_gb"] is not None and r["ram_gb"] >= 512),
    ("min_disk_gb", 2000, lambda r: r["disk_gb"] is not None and r["disk_gb"] >= 2000),
]


@pytest.mark.parametrize(("name", "value", "passes"), NODE_FILTERS)
def test_each_node_filter_keeps_exactly_the_offers_whose_known_value_passes(
    client, name, value, passes
):
    everything = offers(client)
    wanted = [r for r in everything if passes(r)]
    assert wanted and len(wanted) < len(everything)  # the recorded market tells them apart
    assert keys(offers(client, **{name: value})) == keys(wanted)


def test_an_unknown_value_never_passes_a_filter_on_it(client):
    unknown = [r for r in offers(client) if r["reliability"] is None]
    assert unknown  # RunPod, Lambda and CoreWeave report no reliability
    assert not keys(unknown) & keys(offers(client, min_reliability=0))


def sort_key(row: dict, field: str) -> float:
    return row[field]


@pytest.mark.parametrize("field", SORT_FIELDS)
@pytest.mark.parametrize("descending", [False, True])
def test_any_numeric_field_sorts_with_unknown_values_last_and_ties_cheapest_first(
    client, field, descending
):
    got = offers(client, sort=("-" if descending else "") + field)
    known = [r for r in got if r[field] is not None]
    assert [r for r in got[len(known) :] if r[field] is not None] == []  # unknowns last
    values = [r[field] for r in known]
    assert values == sorted(values, reverse=descending)
    for a, b in zip(known, known[1:], strict=False):
        if a[field] == b[field]:
            assert a["price_per_gpu_hour"] <= b["price_per_gpu_hour"]


def test_sort_minus_reliability_puts_the_most_reliable_first(client):
    got = offers(client, sort="-reliability", limit=3)
    assert got[0]["reliability"] == max(r["reliability"] or 0 for r in offers(client))


def test_price_per_pflop_hour_uses_dense_bf16_or_fp16_where_the_card_has_no_bf16(client):
    by_gpu = {(r["gpu"], r["form_factor"]): r for r in offers(client)}
    h100 = by_gpu[("H100-80GB", "SXM")]
    assert h100["price_per_pflop_hour"] == pytest.approx(h100["price_per_gpu_hour"] / 0.989)
    v100 = next(r for r in offers(client, gpu="V100"))  # no BF16: dense FP16
    assert v100["form_factor"] is None  # SXM2 125 TFLOPs or PCIe 112: the lower one counts
    assert v100["price_per_pflop_hour"] == pytest.approx(v100["price_per_gpu_hour"] / 0.112)
    unknown = [r for r in offers(client) if r["gpu"] is None]
    assert all(r["price_per_pflop_hour"] is None for r in unknown)


def test_nvlink_is_true_on_sxm_boards_and_unknown_where_a_bridge_may_link_pcie_cards(client):
    rows = offers(client, gpu="H100")
    assert {r["nvlink"] for r in rows if r["form_factor"] == "SXM"} == {True}
    assert {r["nvlink"] for r in rows if r["form_factor"] == "PCIe"} == {None}
    assert {r["nvlink"] for r in offers(client, gpu="RTX 4090")} == {False}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"sort": "colour"}, "price_per_pflop_hour"),
        ({"sort": "-provider"}, "-field for descending"),
        ({"gpu": "H100:x"}, "NAME:COUNT"),
        ({"gpu": "H100:8", "gpu_count": 4}, "says 8 GPUs but gpu_count says 4"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"min_reliability": 1.5}, "min_reliability"),
        ({"min_vram_gb": -1}, "min_vram_gb"),
        ({"max_price_per_hour": "cheap"}, "max_price_per_hour"),
        ({"verified": "maybe"}, "verified"),
    ],
)
def test_bad_search_values_are_422_saying_what_to_fix(client, params, says):
    response = client.get("/offers", params=params)
    assert response.status_code == 422
    assert says in json.dumps(response.json())


def test_ndjson_streams_every_matching_offer_one_per_line_uncapped(client):
    page = offers(client, gpu="H100")
    response = client.get(
        "/offers",
        params={"gpu": "H100", "include_unavailable": "true"},
        headers={"Accept": "application/x-ndjson"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines == page


def test_ndjson_over_the_page_cap_and_as_a_sql_answer_too(client):
    everything = offers(client)
    streamed = client.get(
        "/offers",
        params={"include_unavailable": "true", "region": "a"},  # region: answered by SQL
        headers={"Accept": "application/x-ndjson"},
    )
    rows = [json.loads(line) for line in streamed.text.splitlines()]
    assert rows and keys(rows) == keys(
        [r for r in everything if r["region"] and "a" in r["region"].lower()]
    )


def test_a_repeated_question_gives_the_same_page_and_fresh_questions_agree_with_sql(client):
    first = client.get("/offers", params={"gpu": "H100", "sort": "-gpu_count"}).json()
    again = client.get("/offers", params={"gpu": "H100", "sort": "-gpu_count"}).json()
    assert first["offers"] == again["offers"]
    assert {o["stale"] for o in first["offers"]} == {True}  # recorded a year before the clock
    via_sql = client.get(
        "/offers", params={"gpu": "H100", "sort": "-gpu_count", "region": " "}
    ).json()  # a region filter every offer with a space in its region passes
    spaced = [o for o in first["offers"] if o["region"] and " " in o["region"]]
    assert via_sql["offers"] == spaced


def test_repeated_and_new_questions_agree_and_bad_ones_are_refused_saying_why(client):
    first = client.get("/offers", params={"gpu": "H100:8"})  # the copy and its JSON made
    again = client.get("/offers", params={"gpu": "H100:8"})  # answered on the event loop
    assert again.content.startswith(first.content[: first.content.index(b',"providers"')])
    new = client.get("/offers", params={"gpu": "H100", "min_gpu_count": 2, "sort": "-gpu_count"})
    counts = [o["gpu_count"] for o in new.json()["offers"]]
    assert counts == sorted(counts, reverse=True) and set(counts) == {2, 4, 8}
    for params, says in [
        ({"gpu": "H100:8", "max_price_per_gpu_hour": 3}, "Unknown query parameter"),
        ({"gpu": "H1OO"}, "Unknown GPU"),
        ({"sort": "colour"}, "price_per_pflop_hour"),
    ]:
        refused = client.get("/offers", params=params)
        assert refused.status_code == 422 and says in refused.text


def test_exports_take_the_same_search(client):
    response = client.get(
        "/export/offers.csv", params={"gpu": "H100:8", "nvlink": "true", "sort": "-price_per_hour"}
    )
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert rows and {r["gpu_count"] for r in rows} == {"8"}
    assert {r["nvlink"] for r in rows} == {"true"} and all(r["price_per_pflop_hour"] for r in rows)
    prices = [float(r["price_per_hour"]) for r in rows]
    assert prices == sorted(prices, reverse=True)


def test_a_large_page_sent_in_pieces_is_the_page_a_small_one_begins(client):
    small = client.get("/offers", params={"include_unavailable": "true", "limit": 100})
    with patch("api.rest.routes.offers.IN_ONE_PIECE_ROWS", 10):  # larger: a piece at a time
        large = client.get("/offers", params={"include_unavailable": "true", "limit": 10_000})
    assert "content-length" not in large.headers  # sent a piece at a time
    whole, first = large.json(), small.json()
    assert whole["count"] == len(whole["offers"]) > 100
    assert whole["offers"][: first["count"]] == first["offers"]
    assert [p["provider"] for p in whole["providers"]] == [
        p["provider"] for p in first["providers"]
    ]
    head = client.head("/offers", params={"include_unavailable": "true", "limit": 10_000})
    assert head.status_code == 200 and head.content == b""
