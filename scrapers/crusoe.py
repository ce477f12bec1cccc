"""Crusoe Cloud: the public pricing page (`GET https://www.crusoe.ai/cloud/pricing`), read as HTML.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Crusoe's API is HMAC-signed and gives capacity, not prices (gpuhunt hard-codes the page's
  prices); the Webflow page is server-rendered and keyless.
- The GPU table is the list under a header row (`.pricing-table-heading`) whose labels are read
  as words: `GPU model` → the GPU, `On-demand` → on-demand, `Current spot` → spot. Each row
  (`.pricing_gpu-item`) holds the model cell (an `h4` name and tags) then one price cell per
  price label, in the header's order; a row with another number of cells is a reject.
- Prices are USD per GPU-hour (`$3.90/GPU-hr`): one offer of one GPU per priced cell.
  `Contact sales` means no price (GB200, B200, MI355X; every spot cell of the 2026 recording).
- The tags give the memory (`80GB` → VRAM per GPU) and the form factor (`HGX`, `SXM` → SXM;
  `PCIe`; `NVL72` is a system, no form factor): `NVIDIA A100` is listed twice, `80GB SXM` and
  `80GB PCIe`, told apart by the tag in `gpu_raw` and the offer id.
- No region is on the page: offers have none, placed by `data/crusoe_regions.csv` (US or
  Iceland: country unknown). `LISTED_ONLY`: listed at a price, not stock.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, Literal

import httpx
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "crusoe"
ENV_KEY = None
KEY_REQUIRED = False  # a public web page
URL = "https://www.crusoe.ai/cloud/pricing"
INTERVAL = timedelta(hours=6)  # a published price list: no stock, prices change rarely
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source

FORM_TAGS = {"hgx": "SXM", "sxm": "SXM", "pcie": "PCIe"}
"""Tag words that state the form factor; they go into `gpu_raw` for the catalog to read."""

Column = Literal["model", "on_demand", "spot"]
_PRICE_COLUMNS: tuple[tuple[Column, Pricing], ...] = (
    ("on_demand", Pricing.ON_DEMAND),
    ("spot", Pricing.SPOT),
)
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.IGNORECASE)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


def _column_of(label: str) -> Column | None:
    words = label_words(label)
    if "spot" in words:
        return "spot"
    if "on" in words and "demand" in words or "ondemand" in words:
        return "on_demand"
    if "gpu" in words or "model" in words:
        return "model"
    return None


def _gpu_columns(soup: BeautifulSoup) -> tuple[Tag, list[Column | None]] | None:
    """The GPU list's header row and what each of its labels means."""
    for heading in soup.select(".pricing-table-heading"):
        labels = [visible_text(cell.get_text(" ")) for cell in heading.find_all(recursive=False)]
        columns = [_column_of(label) for label in labels]
        if "model" in columns and any("gpu" in label_words(label) for label in labels):
            if "on_demand" not in columns and "spot" not in columns:
                raise ProviderPayloadError(
                    f"{NAME}: the GPU table has no on-demand or spot column (headers: "
                    f"{', '.join(labels)}) at {URL}; the page layout changed, update "
                    "scrapers/crusoe.py"
                )
            return heading, columns
    return None


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    complete_html(payload, NAME)
    soup = BeautifulSoup(payload, "html.parser")
    found = _gpu_columns(soup)
    heading, columns = found if found else (None, [])
    rows = heading.parent.select(".pricing_gpu-item") if heading and heading.parent else []
    if not rows:
        raise ProviderPayloadError(
            f"{NAME}: no GPU rows under a 'GPU model' header at {URL}; the page markup changed, "
            "update scrapers/crusoe.py"
        )
    batch = OfferBatch(NAME, observed_at, raw_of=lambda i: str(rows[i]),
                       id_of=lambda i: _identity(rows[i])[0] or None)  # fmt: skip
    for i, row in enumerate(rows):
        try:
            batch.add(i, _offers_of(row, columns))
        except (KeyError, TypeError, ValueError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(
            f"{NAME}: {len(rows)} GPU rows, none with a price ({len(result.rejects)} rejected) "
            f"at {URL}; the page changed, update scrapers/crusoe.py"
        )
    return result


def _identity(cell: Tag) -> tuple[str, str, list[str]]:
    """A row's (or its model cell's) offer id, GPU name and tags: `nvidia-a100-sxm`, ..."""
    name_tag = cell.find(re.compile(r"^h[1-6]$"))
    name = visible_text(name_tag.get_text(" ")) if name_tag else ""
    tags = [visible_text(t.get_text(" ")) for t in cell.select(".pricing-tag")]
    kinds = [t for t in tags if t and not _MEMORY.match(t)]
    return slug(name, *kinds), name, tags


def _offers_of(row: Tag, columns: list[Column | None]) -> list[dict[str, Any]]:
    cells = [cell for cell in row.find_all(recursive=False) if isinstance(cell, Tag)]
    if len(cells) != len(columns):
        raise ValueError(f"row has {len(cells)} cells for {len(columns)} column labels")
    by_column = dict(zip(columns, cells, strict=True))
    offer_id, name, tags = _identity(by_column["model"])
    if not name:
        raise ValueError("row has no GPU model")
    vram_gb = next((float(m.group(1)) for t in tags if (m := _MEMORY.match(t))), None)
    form = next((FORM_TAGS[w] for t in tags for w in label_words(t) if w in FORM_TAGS), None)
    common = {
        "offer_id": offer_id,
        "gpu_raw": f"{name} {form}" if form else name,
        "gpu_count": 1,
        "vram_gb": vram_gb,
        "region": None,
        "available": True,  # listed at a price (LISTED_ONLY), not stock
    }
    offers = []
    for column, pricing in _PRICE_COLUMNS:
        cell = by_column.get(column)
        price = usd_per_hour(cell.get_text(" ")) if cell is not None else None
        if price is not None:
            offers.append({**common, "pricing": pricing, "price_per_gpu_hour": price})
    return offers
