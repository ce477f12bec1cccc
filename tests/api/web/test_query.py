from __future__ import annotations

from urllib.parse import parse_qsl

from api.web.offers_view import age_words, cheapest_per_gpu, sort_rows
from api.web.query import PageQuery


def test_links_keep_the_page_state_and_leave_out_defaults():
    query = PageQuery.from_params({"gpu": "H100-80GB", "pricing": "", "method": "lora"})
    assert query.pricing is None and query.workload is not None
    url = query.url("offers", sort="price_per_hour", order="desc")
    path, _, fragment = url.partition("#")
    params = dict(parse_qsl(path.lstrip("?")))
    assert fragment == "offers"
    assert params["gpu"] == "H100-80GB" and params["sort"] == "price_per_hour"
    assert params["method"] == "lora" and params["tokens"] == "50M"
    assert "view" not in params and "interval" not in params
    assert PageQuery().url() == "?"


def test_nonsense_values_fall_back_to_defaults_and_say_so():
    query = PageQuery.from_params({"sort": "colour", "interval": "5m", "pricing": "free"})
    assert (query.sort, query.interval, query.pricing) == ("price_per_gpu_hour", "1h", None)
    assert len(query.problems) == 3 and "interval must be one of 1d, 1h, 1w" in query.problems


def offer(gpu, provider, pricing, price, **extra):
    return {
        "gpu": gpu,
        "gpu_raw": gpu or "Mystery 9000",
        "form_factor": None,
        "provider": provider,
        "pricing": pricing,
        "price_per_gpu_hour": price,
        "region": extra.get("region"),
    }


def test_cheapest_keeps_one_offer_per_gpu_provider_and_pricing():
    rows = [
        offer("A100-80GB", "vastai", "spot", 0.9),
        offer("A100-80GB", "vastai", "spot", 0.7),
        offer("A100-80GB", "vastai", "on_demand", 1.2),
        offer(None, "vastai", "spot", 0.1),
    ]
    best = {
        (r["gpu"], r["pricing"]): (r["price_per_gpu_hour"], r["offers"])
        for r in cheapest_per_gpu(rows)
    }
    assert best == {
        ("A100-80GB", "spot"): (0.7, 2),
        ("A100-80GB", "on_demand"): (1.2, 1),
        (None, "spot"): (0.1, 1),
    }


def test_sorting_by_a_column_puts_unknown_values_last_either_way():
    rows = [
        offer("A", "p", "spot", 1.0, region="US"),
        offer("B", "p", "spot", 2.0),
        offer("C", "p", "spot", 3.0, region="EU"),
    ]
    assert [r["gpu"] for r in sort_rows(rows, "region")] == ["C", "A", "B"]
    assert [r["gpu"] for r in sort_rows(rows, "region", descending=True)] == ["A", "C", "B"]
    assert [r["gpu"] for r in sort_rows(rows, "price_per_gpu_hour", descending=True)] == [
        "C",
        "B",
        "A",
    ]


def test_ages_read_as_words():
    assert [age_words(s) for s in (None, 30, 300, 3 * 3600 + 60, 2 * 86400)] == [
        "never", "just now", "5 min ago", "3 h 1 min ago", "2 d ago",
    ]  # fmt: skip
