"""DigitalOcean GPU Droplets: the public Droplet pricing docs page, read as HTML.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The sizes API (`GET /v2/sizes`) needs a token; the docs page
  (`GET https://docs.digitalocean.com/products/droplets/details/pricing/`) is keyless and lists
  every self-service GPU plan (getcomputable/gpu-index reads the same page).
- Tables are found by the heading above them, read as words: `On-Demand GPU Droplet Pricing` →
  on-demand, `Spot GPU Droplet Pricing` → spot (interruptible, reclaimed with two hours' notice;
  the price may change daily). `Contract GPU Droplet Pricing` (`Per contract after contacting
  sales`) and every other section are not hourly offers and are skipped. In a table, the columns
  are found by their header labels (`GPU`, `Price`), not by position.
- A row is either one GPU (`AMD MI300X`, `$2.59 per hour`: the price of one GPU, per GPU-hour)
  or a whole node (`AMD MI300X (8x)`, `$20.72 per hour`: the 8-GPU Droplet, per instance-hour).
  Both are kept, each with the price it quotes; the other is derived.
- `NVIDIA B300, air-cooled` and `, liquid-cooled` are two plans of one board: the cooling is the
  offer's `tier`, the board is `NVIDIA B300`.
- The page names boards briefly: its `NVIDIA RTX 4000` and `NVIDIA RTX 6000` are the Ada
  Generation cards (DigitalOcean's GPU Droplet plans, `gpu-4000adax1-20gb`,
  `gpu-6000adax1-48gb`), which our catalog would otherwise read as the Turing Quadro boards;
  `BOARDS` names them in full. `NVIDIA H100` is the 80 GB part (`gpu-h100x1-80gb`).
- No region is on the page: offers have none, and `data/digitalocean_regions.csv` places every
  one in DigitalOcean's GPU regions (US or Canada, so North America).
- A published price list: `LISTED_ONLY`, `available=True` means "listed at a price" (no stock).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "digitalocean"
ENV_KEY = None
KEY_REQUIRED = False  # a public docs page
URL = "https://docs.digitalocean.com/products/droplets/details/pricing/"
INTERVAL = timedelta(hours=6)  # a published price list; spot prices "may change daily"
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source

BOARDS = {
    "NVIDIA RTX 4000": "NVIDIA RTX 4000 Ada Generation",
    "NVIDIA RTX 6000": "NVIDIA RTX 6000 Ada Generation",
}
"""The page's short names whose board is otherwise misread (see the module docstring)."""
VRAM_GB = {"NVIDIA H100": 80.0}
"""Per-GPU memory where the board comes in several sizes and the page states none."""

_NODE = re.compile(r"^(?P<name>.+?)\s*\((?P<count>\d+)\s*x\)$", re.IGNORECASE)
"""`AMD MI300X (8x)`: the whole node of `count` GPUs."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public docs page refused the request (bot protection?); retry later",
    )


def _pricing_of(heading: Tag) -> Pricing | None:
    """What a section heading announces: on-demand or spot GPU prices, else None."""
    words = label_words(heading.get_text(" "))
    if "gpu" not in words or "pricing" not in words:
        return None
    if "spot" in words:
        return Pricing.SPOT
    if "on" in words and "demand" in words:
        return Pricing.ON_DEMAND
    return None  # contract, reserved, ...


def _tables(soup: BeautifulSoup) -> list[tuple[Pricing, Tag]]:
    """The table under each on-demand or spot GPU heading (before the next heading)."""
    found = []
    for heading in soup.find_all("h2"):
        pricing = _pricing_of(heading)
        if pricing is None:
            continue
        table = heading.find_next("table")
        if table is not None and table.find_previous("h2") is heading:
            found.append((pricing, table))
    return found


def _columns(table: Tag) -> tuple[int, int]:
    """The positions of the GPU and the price columns, found by their header labels."""
    labels = [label_words(cell.get_text(" ")) for cell in table.find_all("th")]
    gpu = next((i for i, words in enumerate(labels) if "gpu" in words), None)
    price = next((i for i, words in enumerate(labels) if {"price", "pricing"} & set(words)), None)
    if gpu is None or price is None:
        raise ProviderPayloadError(
            f"{NAME}: a GPU pricing table has no GPU or price column (headers: "
            f"{[' '.join(words) for words in labels]}) at {URL}; the page layout changed, "
            "update scrapers/digitalocean.py"
        )
    return gpu, price


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    complete_html(payload, NAME)
    soup = BeautifulSoup(payload, "html.parser")
    rows: list[tuple[Pricing, str, str, Tag]] = []
    for pricing, table in _tables(soup):
        gpu, price = _columns(table)
        for row in table.find_all("tr"):
            cells = row.find_all("td")
            if len(cells) > max(gpu, price):
                rows.append((pricing, visible_text(cells[gpu].get_text(" ")),
                             cells[price].get_text(" "), row))  # fmt: skip
    if not rows:
        raise ProviderPayloadError(
            f"{NAME}: no rows under an on-demand or spot GPU Droplet pricing heading at {URL}; "
            "the page layout changed, update scrapers/digitalocean.py"
        )
    batch = OfferBatch(
        NAME,
        observed_at,
        raw_of=lambda i: str(rows[i][3]),
        id_of=lambda i: slug(rows[i][1]),
    )
    for i, (pricing, label, price_cell, _) in enumerate(rows):
        try:
            batch.add(i, _offers_of(pricing, label, price_cell))
        except (TypeError, ValueError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(
            f"{NAME}: {len(rows)} GPU rows, none with a price ({len(result.rejects)} rejected) "
            f"at {URL}; the page layout changed, update scrapers/digitalocean.py"
        )
    return result


def _offers_of(pricing: Pricing, label: str, price_cell: str) -> list[dict[str, Any]]:
    usd = usd_per_hour(price_cell)
    if usd is None:
        return []  # no hourly price in this row
    node = _NODE.match(label)
    name, count = (node.group("name"), int(node.group("count"))) if node else (label, 1)
    board, _, variant = (part.strip() for part in name.partition(","))
    if not board:
        raise ValueError(f"row {label!r} names no GPU")
    offer: dict[str, Any] = {
        "offer_id": slug(label),
        "gpu_raw": BOARDS.get(board, board),
        "gpu_count": count,
        "vram_gb": VRAM_GB.get(board),
        "pricing": pricing,
        "region": None,
        "available": True,  # listed at a price (LISTED_ONLY), not stock
        "tier": variant or None,
    }
    # `(8x)`: the node's price; a plain row: one GPU's price.
    offer["price_per_hour" if node else "price_per_gpu_hour"] = usd
    return [offer]
