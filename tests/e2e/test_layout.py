"""The page's layout in headless Chromium: the job first, and nothing wider than the screen.

At 1280×900 (a laptop) and 390×844 (a phone) the quote form is within the first screen and a
half; at 1280 no table needs sideways scrolling; at 390 only a table's (or chart's) own box may
scroll, never the page. Screenshots of both land in `tests/artifacts/` (`layout-1280.png`,
`layout-390.png`).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import needs_chromium

pytestmark = needs_chromium

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
FIRST_SCREENS = 1.5
"""How far down the quote form may start, in screen heights."""
WORKLOAD = "model=Llama-3.1-70B&method=lora&tokens=50M&seq_len=4096&include_spot=1"
"""A job whose quotes carry notes (spot interruption, precision): the widest quote rows."""
PAGES = ("/", f"/?view=all&include_unavailable=1&{WORKLOAD}", f"/?gpu=H100-80GB&{WORKLOAD}")

OPEN_FOLDS = "document.querySelectorAll('details.fold').forEach(d => { d.open = true; })"
SCROLLERS = ".table-scroll, .chart-scroll"
"""The boxes a wide table or chart may scroll inside."""

BOXES = """boxes => boxes.map(box => ({
    id: (box.querySelector('table, svg') || box).id || box.className,
    scroll: box.scrollWidth, client: box.clientWidth }))"""
OUTSIDE = """([sel, width]) => [...document.querySelectorAll('.masthead *, main *, .foot *')]
    .filter(e => !e.closest(sel) && e.getClientRects().length)
    .filter(e => { const r = e.getBoundingClientRect(); return r.left < -1 || r.right > width + 1 })
    .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + e.className)"""


@pytest.fixture
def tab(browser, base_url, request):
    """A tab at the viewport `request.param` (a phone one emulates touch and mobile layout)."""
    viewport = request.param
    context = browser.new_context(
        viewport=viewport, base_url=base_url, is_mobile=viewport["width"] < 600
    )
    try:
        yield context.new_page()
    finally:
        context.close()


def _top_of(page, selector: str) -> float:
    return page.evaluate(
        f"document.querySelector('{selector}').getBoundingClientRect().top + window.scrollY"
    )


@pytest.mark.parametrize("tab", [DESKTOP, PHONE], indirect=True, ids=["1280", "390"])
def test_the_quote_form_and_its_answer_come_first(tab, artifacts):
    viewport = tab.viewport_size
    tab.goto("/")
    form_top = _top_of(tab, "#quotes form.workload")
    assert form_top <= FIRST_SCREENS * viewport["height"]
    first = tab.locator("#quotes-table tbody tr").first  # the default job, quoted at once
    assert first.is_visible() and "$" in first.locator(".price").text_content()
    assert _top_of(tab, "#quotes-table tbody tr") <= FIRST_SCREENS * viewport["height"]
    sections = tab.eval_on_selector_all("main > section", "ss => ss.map(s => s.id)")
    assert sections[0] == "quotes"
    assert sections.index("gpus") < sections.index("history") < sections.index("offers")
    tab.screenshot(path=artifacts / f"layout-{viewport['width']}.png")


@pytest.mark.parametrize("tab", [DESKTOP], indirect=True, ids=["1280"])
@pytest.mark.parametrize("path", PAGES)
def test_at_1280_no_table_scrolls_sideways(tab, path):
    tab.goto(path)
    tab.evaluate(OPEN_FOLDS)
    wide = [b for b in tab.eval_on_selector_all(SCROLLERS, BOXES) if b["scroll"] > b["client"]]
    assert wide == []
    assert tab.evaluate("document.documentElement.scrollWidth") <= DESKTOP["width"]
    assert tab.locator("#quotes-table").count() and tab.locator("#offers-table").count()


@pytest.mark.parametrize("tab", [PHONE], indirect=True, ids=["390"])
@pytest.mark.parametrize("path", PAGES)
def test_at_390_only_a_tables_own_box_scrolls(tab, path, artifacts):
    tab.goto(path)
    tab.evaluate(OPEN_FOLDS)
    assert tab.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert tab.evaluate(OUTSIDE, [SCROLLERS, PHONE["width"]]) == []
    health = tab.locator("#health-table tbody tr").first  # a card: nothing of it clipped
    box = health.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    if path == "/":
        tab.screenshot(path=artifacts / "layout-390-open.png", full_page=True)


@pytest.mark.parametrize("tab", [PHONE], indirect=True, ids=["390"])
def test_on_a_phone_the_market_is_folded_and_stays_as_the_reader_leaves_it(tab):
    tab.goto("/")
    folds = tab.eval_on_selector_all("main details.fold", "ds => ds.map(d => [d.id, d.open])")
    assert folds and all(not is_open for _, is_open in folds)
    assert not tab.locator("#gpu-table").is_visible()
    tab.click("#gpus-fold > summary")
    assert tab.locator("#gpu-table").is_visible()
    tab.select_option("#gpu", "H100-80GB")  # swaps in the server's new page
    tab.wait_for_url("**gpu=H100-80GB**")
    tab.wait_for_selector('#chart[data-gpu="H100-80GB"]', state="attached")
    assert tab.locator("#gpu-table").is_visible()  # still open, as the reader left it
    assert not tab.locator("#offers-table").is_visible()  # still folded
    tab.click("#gpu-table tbody th a")  # a GPU's link goes to its offers: that fold opens
    tab.wait_for_url("**gpu=H100-80GB**")
    tab.wait_for_selector("#offers-fold[open]", state="attached")
    assert tab.locator("#offers-table").is_visible()


@pytest.mark.parametrize("tab", [DESKTOP], indirect=True, ids=["1280"])
def test_on_a_wide_screen_every_part_is_open(tab):
    tab.goto("/")
    folds = tab.eval_on_selector_all("main details.fold", "ds => ds.map(d => d.open)")
    assert folds and all(folds)
    assert tab.locator("#gpu-table").is_visible() and tab.locator("#chart").is_visible()
