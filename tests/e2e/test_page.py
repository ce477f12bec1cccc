"""The page in real headless Chromium against `gpuprices serve`, as a person would use it.

Run alone with `.venv/bin/python -m pytest tests/e2e -q`; screenshots land in `tests/artifacts/`.
"""

from __future__ import annotations

import httpx

from tests.e2e.conftest import needs_chromium
from tests.e2e.seed import FRESH_PROVIDERS, STALE_PROVIDER

pytestmark = needs_chromium

PHONE_PX = 390
"""The narrowest common phone in portrait (issue 22 measured the page at 390 px)."""


def _dollars(text: str) -> float:
    return float(text.strip().lstrip("$").replace(",", ""))


def _rows(page) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#offers-table tbody tr[data-provider]",
        "rows => rows.map(r => ({...r.dataset, price: r.querySelector('.price').textContent}))",
    )


def test_the_table_lists_the_replayed_offers(page, base_url):
    api = httpx.get(f"{base_url}/offers").json()["offers"]
    page.goto("/")
    shown = {(r["gpu"], r["provider"], r["pricing"]) for r in _rows(page)}
    assert shown == {(o["gpu"] or "", o["provider"], o["pricing"]) for o in api}
    assert {provider for _, provider, _ in shown} == {STALE_PROVIDER, *FRESH_PROVIDERS}
    prices = [_dollars(r["price"]) for r in _rows(page)]
    assert prices == sorted(prices)

    page.click("#offers-summary a")  # "Show all": every offer, one row each
    page.wait_for_url("**view=all**")
    assert len(_rows(page)) == len(api)


def test_choosing_h100_filters_the_table_and_redraws_the_chart(page):
    page.goto("/")
    before = page.get_attribute("#chart", "data-gpu")
    assert before and before != "H100-80GB"

    page.select_option("#gpu", "H100-80GB")  # the script applies it at once, no reload
    page.wait_for_selector('#chart[data-gpu="H100-80GB"]')

    assert "gpu=H100-80GB" in page.url
    rows = _rows(page)
    assert rows and {r["gpu"] for r in rows} == {"H100-80GB"}
    assert page.text_content("#chart-gpu") == "H100-80GB"
    lines = page.eval_on_selector_all(
        "#chart .series",
        "gs => gs.map(g => ({...g.dataset, d: g.querySelector('path')?.getAttribute('d') ?? ''}))",
    )
    assert {line["provider"] for line in lines} >= {STALE_PROVIDER, *FRESH_PROVIDERS}
    runpod = [ln["d"] for ln in lines if (ln["provider"], ln["pricing"]) == ("runpod", "on_demand")]
    assert runpod and all(d.count("M") == 2 for d in runpod)  # four missed runs: a break

    page.select_option("#interval", "1d")
    page.wait_for_selector('#chart[data-interval="1d"][data-gpu="H100-80GB"]')


def test_the_workload_form_returns_ranked_quotes(page):
    page.goto("/")
    page.fill("#model", "Llama-3.1-8B")
    page.select_option("#method", "qlora")
    page.fill("#tokens", "50M")
    page.fill("#seq_len", "2048")
    page.click("#quotes button[type=submit]")
    page.wait_for_url("**method=qlora**")  # the default job is quoted already: wait for this one
    page.wait_for_selector("#quotes-table")

    costs = page.eval_on_selector_all(
        "#quotes-table tbody tr", "rows => rows.map(r => r.querySelector('.price').textContent)"
    )
    assert len(costs) >= 3
    assert [_dollars(c) for c in costs] == sorted(_dollars(c) for c in costs)
    assert "Llama-3.1-8B" in page.text_content("#quotes-summary")
    assert "method=qlora" in page.url and "tokens=50M" in page.url


def test_a_stale_provider_shows_its_warning(page):
    page.goto("/")
    warning = page.locator("#stale-warning")
    assert warning.is_visible()
    assert STALE_PROVIDER in warning.text_content()
    assert "stale after 30 min" in warning.text_content()
    badges = {
        b["provider"]: b["class"]
        for b in page.eval_on_selector_all(
            ".badges .badge",
            "bs => bs.map(b => ({provider: b.dataset.provider, class: b.className}))",
        )
    }
    assert "stale" in badges[STALE_PROVIDER]
    assert all("fresh" in badges[name] for name in FRESH_PROVIDERS)


def test_without_javascript_the_table_still_renders_and_filters(browser, base_url):
    context = browser.new_context(java_script_enabled=False, base_url=base_url)
    try:
        page = context.new_page()
        page.goto("/")
        assert page.get_attribute("html", "class") == "no-js"
        assert len(_rows(page)) > 10
        page.select_option("#gpu", "H100-80GB")
        page.click("#gpus form button[type=submit]")  # a plain GET form
        page.wait_for_url("**gpu=H100-80GB**")
        assert {r["gpu"] for r in _rows(page)} == {"H100-80GB"}
        page.click("#offers-table thead a:text('$/hour')")  # sorting is a plain link too
        page.wait_for_url("**sort=price_per_hour**")
        per_hour = page.eval_on_selector_all(
            "#offers-table tbody tr",
            "rows => rows.map(r => r.cells[4].textContent)",  # the $/hour column
        )
        assert [_dollars(p) for p in per_hour] == sorted(_dollars(p) for p in per_hour)
    finally:
        context.close()


def test_on_a_390px_phone_nothing_scrolls_sideways_and_prices_are_on_screen(
    browser, base_url, artifacts
):
    context = browser.new_context(
        viewport={"width": PHONE_PX, "height": 844}, base_url=base_url, is_mobile=True
    )
    try:
        page = context.new_page()
        page.goto("/?gpu=H100-80GB&model=Llama-3.1-8B&method=qlora&tokens=50M&seq_len=2048")
        folded = page.locator("main details.fold:not([open]) > summary")
        while folded.count():
            folded.first.click()  # folded at first on a phone (tests/e2e/test_layout.py)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE_PX
        prices = ("#offers-table tbody tr[data-provider]", "#gpu-table", "#quotes-table")
        for selector in (f"{table} .price" for table in prices):
            box = page.locator(selector).first.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE_PX, selector
        controls = page.eval_on_selector_all(
            "main select, main input:not([type=hidden]), main button",
            "els => els.filter(e => e.offsetParent).map(e => {"
            " const r = e.getBoundingClientRect(); return [e.id || e.name, r.left, r.right]; })",
        )
        cut = [
            (name, left, right)
            for name, left, right in controls
            if not 0 <= left < right <= PHONE_PX
        ]
        assert controls and cut == []  # every dropdown, field and button fits the screen
        page.screenshot(path=artifacts / "page-390.png", full_page=True)
    finally:
        context.close()


def _gpu_view(page) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#gpu-table tbody tr[data-gpu]", "rows => rows.map(r => ({...r.dataset}))"
    )


def test_the_first_view_lists_one_row_per_gpu_with_the_cheapest_available_prices(page, base_url):
    offers = httpx.get(f"{base_url}/offers").json()["offers"]
    expected: dict[tuple[str, str, str], float] = {}
    for o in offers:
        if o["available"] and o["gpu"]:
            key = (o["gpu"], o["form_factor"] or "", o["pricing"])
            expected[key] = min(expected.get(key, o["price_per_gpu_hour"]), o["price_per_gpu_hour"])
    page.goto("/")
    rows = [r for r in _gpu_view(page) if r["gpu"]]
    assert len({(r["gpu"], r["formFactor"]) for r in rows}) == len(rows)  # one row per GPU
    shown = {
        (r["gpu"], r["formFactor"], pricing): float(r[field])
        for r in rows
        for pricing, field in (("on_demand", "onDemand"), ("spot", "spot"))
        if r[field]
    }
    assert shown == expected
    prices = [float(r["onDemand"]) for r in _gpu_view(page) if r["onDemand"]]
    assert prices == sorted(prices)  # the cheapest GPU-hour first, as a buyer compares

    page.click("#gpu-sort a:text('Most VRAM')")
    page.wait_for_url("**gpu_sort=vram**")
    vram = [float(r["vram"] or 0) for r in _gpu_view(page)]
    assert vram == sorted(vram, reverse=True) and vram[0] >= 80


def test_the_charts_now_is_the_tables_cheapest_available_offer(page):
    page.goto("/?gpu=H100-80GB")
    table = {
        (r["provider"], r["pricing"], r["formFactor"]): float(r["price"])
        for r in page.eval_on_selector_all(
            "#offers-table tbody tr[data-provider]", "rows => rows.map(r => ({...r.dataset}))"
        )
    }
    legend = page.eval_on_selector_all(".legend li", "ls => ls.map(l => ({...l.dataset}))")
    now = {(li["provider"], li["pricing"], li["formFactor"]): float(li["now"]) for li in legend}
    assert table and now == table


def test_screenshot_of_the_page(page, artifacts):
    page.goto("/")
    page.select_option("#gpu", "H100-80GB")
    page.wait_for_selector('#chart[data-gpu="H100-80GB"]')
    page.click("#quotes button[type=submit]")
    page.wait_for_url("**method=qlora**")
    page.wait_for_selector("#quotes-table")
    page.evaluate("window.scrollTo(0, 0)")
    path = artifacts / "page.png"
    page.screenshot(path=path, full_page=True)
    assert path.stat().st_size > 0
