"""Hyperstack: the public GPU pricing page (`GET https://www.hyperstack.cloud/gpu-pricing`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The API needs a key; the HubSpot page is server-rendered and keyless.
- The page is a set of price cards (`.page-price_card`), each titled by its `h3`: `On-Demand GPU
  Pricing` → on-demand, `Spot VM Pricing` → spot (Hyperstack's interruptible VMs).
  `Reservation Pricing` (`Starting from`, reserved contracts), CPU, storage and other services
  are not hourly GPU offers and are skipped. Columns are found by their header labels read as
  words (`GPU Model`, `VRAM (GB)`, `Pricing Per Hour`, `Spot VM`), not by position.
- Prices are USD per GPU-hour: the on-demand card states resources `per GPU` (`Max pCPUs per
  GPU`, `Max RAM (GB) per GPU`) and Hyperstack's flavors of 1 to 8 GPUs are priced by the GPU.
  Each priced row is one offer of one GPU. The `Max` pCPU/RAM figures are ceilings over
  flavors, not one offer's, and are not published.
- The page shortens board names: `BOARDS` gives the board each short name is, as Hyperstack's
  own menu and flavor docs name it (`NVIDIA A6000` is the RTX A6000; `NVIDIA H100` and `NVIDIA
  H100 NVLink` are the H100 PCIe, the latter with NVLink bridges; `NVIDIA A100` / `A100 NVLink`
  the A100 80GB PCIe; `RTX Pro 6000 SE` the RTX PRO 6000 Server Edition). The short name stays
  in the offer id. The spot card has no VRAM column: the on-demand row of the same board gives it.
- No region is on the page: offers have none, placed by `data/hyperstack_regions.csv` (Canada,
  Norway or the US: country unknown). `LISTED_ONLY`: listed at a price, not stock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

import httpx
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "hyperstack"
ENV_KEY = None
KEY_REQUIRED = False  # a public web page
URL = "https://www.hyperstack.cloud/gpu-pricing"
INTERVAL = timedelta(hours=6)  # a published price list: no stock, prices change rarely
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source

BOARDS = {
    "NVIDIA A6000": "NVIDIA RTX A6000",
    "NVIDIA A4000": "NVIDIA RTX A4000",
    "NVIDIA H100": "NVIDIA H100 PCIe",
    "NVIDIA H100 NVLink": "NVIDIA H100 PCIe",
    "NVIDIA A100": "NVIDIA A100 PCIe",
    "NVIDIA A100 NVLink": "NVIDIA A100 PCIe",
    "NVIDIA RTX Pro 6000 SE": "NVIDIA RTX PRO 6000 Server Edition",
}
"""The page's short names and the boards they are (see the module docstring)."""

Column = Literal["model", "vram", "price"]


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


def _pricing_of(card: Tag) -> Pricing | None:
    title = card.find("h3")
    words = label_words(title.get_text(" ")) if title else []
    if "spot" in words:
        return Pricing.SPOT
    if "on" in words and "demand" in words and "gpu" in words:
        return Pricing.ON_DEMAND
    return None  # reservation, CPU, storage, other services


def _column_of(label: str, pricing: Pricing) -> Column | None:
    words = label_words(label)
    if "gpu" in words and "model" in words:
        return "model"
    if "vram" in words:
        return "vram"
    if {"price", "pricing"} & set(words) or pricing == Pricing.SPOT and "spot" in words:
        return "price"
    return None


def _text(tag: Tag) -> str:
    return visible_text(tag.get_text(" "))


_Row = tuple[Pricing, dict[Column, str] | None, Tag, str]
"""A card's row: its pricing, its cells by column (None when they do not match the labels), the
row as served and its GPU model's text."""


def _rows(soup: BeautifulSoup) -> list[_Row]:
    found = []
    for card in soup.select(".page-price_card"):
        pricing = _pricing_of(card)
        if pricing is None:
            continue
        labels = [_text(cell) for cell in card.select(".page-price_card_head_item")]
        columns = [_column_of(label, pricing) for label in labels]
        if "model" not in columns or "price" not in columns:
            raise ProviderPayloadError(
                f"{NAME}: the {pricing.value} GPU card has no GPU model or price column "
                f"(headers: {', '.join(labels)}) at {URL}; the page layout changed, update "
                "scrapers/hyperstack.py"
            )
        for row in card.select(".page-price_card_row_item"):
            cells = row.select(".page-price_card_row_item_col")
            read = None
            if len(cells) == len(columns):
                read = {c: _text(cell) for c, cell in zip(columns, cells, strict=True) if c}
            at = columns.index("model")
            found.append((pricing, read, row, _text(cells[at]) if at < len(cells) else ""))
    return found


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    complete_html(payload, NAME)
    rows = _rows(BeautifulSoup(payload, "html.parser"))
    if not rows:
        raise ProviderPayloadError(
            f"{NAME}: no rows in an on-demand or spot GPU price card at {URL}; the page markup "
            "changed, update scrapers/hyperstack.py"
        )
    vram_of = {_board(cells["model"]): cells["vram"] for _, cells, _, _ in rows
               if cells and cells.get("model") and cells.get("vram")}  # fmt: skip
    batch = OfferBatch(NAME, observed_at, raw_of=lambda i: str(rows[i][2]),
                       id_of=lambda i: _row_id(rows[i]))  # fmt: skip
    for i, (pricing, cells, _, _) in enumerate(rows):
        try:
            if cells is None:
                raise ValueError("row has a cell count that does not match the column labels")
            batch.add(i, _offers_of(pricing, cells, vram_of))
        except (KeyError, TypeError, ValueError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(
            f"{NAME}: {len(rows)} GPU rows, none with a price ({len(result.rejects)} rejected) "
            f"at {URL}; the page changed, update scrapers/hyperstack.py"
        )
    return result


def _board(model: str) -> str:
    return BOARDS.get(model, model)


def _row_id(row: _Row) -> str | None:
    pricing, _, _, model = row
    return f"{slug(model)}/{pricing.value}" if model else None


def _offers_of(
    pricing: Pricing, cells: dict[Column, str], vram_of: dict[str, str]
) -> list[dict[str, Any]]:
    model = cells["model"]
    if not model:
        raise ValueError("row has no GPU model")
    price = usd_per_hour(cells["price"])
    if price is None:
        return []
    vram = cells.get("vram") or vram_of.get(_board(model))
    try:
        vram_gb = float(vram) if vram else None
    except ValueError:
        raise ValueError(f"VRAM {vram!r} is not a number of GB") from None
    return [{
        "offer_id": slug(model),
        "gpu_raw": _board(model),
        "gpu_count": 1,
        "vram_gb": vram_gb,
        "pricing": pricing,
        "price_per_gpu_hour": price,
        "region": None,
        "available": True,  # listed at a price (LISTED_ONLY), not stock
    }]  # fmt: skip
