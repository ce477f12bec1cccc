"""Hot Aisle: the public pricing page (`GET https://hotaisle.xyz/pricing`), read as HTML.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Hot Aisle's API needs a team token; the Astro page is server-rendered and keyless. AMD only.
- Each plan is a card: a kind label (`VM`, `Bare metal`), a name heading (`Small`), the GPU
  counts and model (`1x MI300x`, `2x & 4x MI300x`, `8x MI300x`), a price (`$2.99/GPU/hr`: USD
  per GPU-hour) and a list of specs. A card is the nearest block around a price that holds
  exactly one heading; the page's summary boxes and the grandfathered rate (`$1.99/GPU/hr` for
  existing customers only) sit outside any card and are not offers.
- A card's counts give one offer each (`2x & 4x` → a 2-GPU and a 4-GPU VM), on-demand, priced
  per GPU (VMs are billed by the minute).
- A minimum term (`8x bare metal ... one-month minimum`) is not an hourly offer: that card is a
  reject with the reason, never an offer at its per-hour figure.
- Specs are read by their words: `HBM3` memory is the VM's total (`384GB or 768GB` for 2 and 4
  GPUs: 192 GB per GPU), `RAM` the system memory, `NVMe`/`Storage` the disk (decimal TB). `A or
  B` pairs follow the counts in order; an alternative that matches no count (`8 or 13 CPU Cores`
  for the 1-GPU VM) is not read. CPU cores are not vCPUs and are not published.
- One location (us-michigan-1, `data/hotaisle_regions.csv`: US). `LISTED_ONLY`: listed at a
  price, not stock.
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

NAME = "hotaisle"
ENV_KEY = None
KEY_REQUIRED = False  # a public web page
URL = "https://hotaisle.xyz/pricing"
INTERVAL = timedelta(hours=6)  # a published price list: no stock, prices change rarely
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source
GB_PER_TB = 1000

_CARD_PRICE = re.compile(r"^\$\s*\d[\d,]*(?:\.\d+)?\s*/\s*GPU\s*/\s*h(?:ou)?r", re.IGNORECASE)
_COUNT = re.compile(r"(?<!\w)(\d+)\s*x\b", re.IGNORECASE)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(TB|GB)\b", re.IGNORECASE)
_PERIOD = r"(?:hour|day|week|month|year)s?"
_MINIMUM = re.compile(
    rf"\b(?:(?P<negated>no|without)\s+)?(?P<term>(?:[\w]+[-\s])?{_PERIOD}[-\s]+minimum"
    rf"|minimum\s+(?:term|commitment|contract|of\s+[\w-]+\s+{_PERIOD}))\b",
    re.IGNORECASE,
)
"""A minimum term: `one-month minimum`, `3-month minimum`, `minimum term`; not `no minimum`."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


def _card_of(price: Tag) -> Tag | None:
    """The widest block around a price that holds exactly one heading (a plan card, with its
    spec list); None when the price sits in no such block (summary boxes, notes)."""
    card = None
    for block in price.parents:
        if not isinstance(block, Tag) or block.name in ("body", "html", "[document]"):
            break
        headings = len(block.find_all(re.compile(r"^h[1-6]$")))
        if headings > 1:
            break
        if headings == 1:
            card = block
    return card


def _cards(soup: BeautifulSoup) -> list[Tag]:
    cards: list[Tag] = []
    for price in soup.find_all("p"):
        if _CARD_PRICE.match(visible_text(price.get_text(" "))):
            card = _card_of(price)
            if card is not None and card not in cards:
                cards.append(card)
    return cards


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    complete_html(payload, NAME)
    cards = _cards(BeautifulSoup(payload, "html.parser"))
    if not cards:
        raise ProviderPayloadError(
            f"{NAME}: no plan card with a $/GPU/hr price at {URL}; the page markup changed, "
            "update scrapers/hotaisle.py"
        )
    batch = OfferBatch(NAME, observed_at, raw_of=lambda i: str(cards[i]),
                       id_of=lambda i: _card_id(cards[i]))  # fmt: skip
    for i, card in enumerate(cards):
        try:
            batch.add(i, _offers_of(card))
        except (TypeError, ValueError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(
            f"{NAME}: {len(cards)} plan cards, none an hourly offer ({len(result.rejects)} "
            f"rejected) at {URL}; the page changed, update scrapers/hotaisle.py"
        )
    return result


def _heading(card: Tag) -> str:
    heading = card.find(re.compile(r"^h[1-6]$"))
    return visible_text(heading.get_text(" ")) if heading else ""


def _kind(card: Tag) -> str:
    """The label above the heading (`VM`, `Bare metal`)."""
    heading = card.find(re.compile(r"^h[1-6]$"))
    label = heading.find_previous_sibling("p") if heading else None
    return visible_text(label.get_text(" ")) if label else ""


def _card_id(card: Tag) -> str:
    return slug(_kind(card), _heading(card))


def _gpus(card: Tag) -> tuple[list[int], str]:
    """The counts and the model: `2x & 4x MI300x` → ([2, 4], 'MI300x')."""
    for block in card.find_all(["div", "p"]):
        text = visible_text(block.get_text(" "))
        if block.find(recursive=False) is None or not _COUNT.match(text):
            continue
        counts = [int(n) for n in _COUNT.findall(text)]
        model = _COUNT.sub(" ", text).replace("&", " ").strip()
        if counts and model and len(model.split()) == 1:
            return counts, model
    raise ValueError("card states no GPU count and model like '1x MI300x'")


def _spec_values(card: Tag, counts: list[int]) -> dict[str, list[float | None]]:
    """Per-count VRAM total, RAM and disk (GB) from the spec list, by the words of each item."""
    found: dict[str, list[float | None]] = {}
    for item in card.find_all("li"):
        text = visible_text(item.get_text(" "))
        words = set(label_words(text))
        for part in text.split("+"):
            part_words = set(label_words(part))
            sizes = [float(n) * (GB_PER_TB if unit.lower() == "tb" else 1)
                     for n, unit in _SIZE.findall(part)]  # fmt: skip
            if not sizes:
                continue
            key = ("vram" if "hbm3" in words or "hbm3e" in words
                   else "ram" if "ram" in part_words
                   else "disk" if {"nvme", "storage", "ssd"} & part_words else None)  # fmt: skip
            if key is None:
                continue
            if len(sizes) == len(counts):
                found[key] = list(sizes)
            elif len(sizes) == 1:
                found[key] = [sizes[0]] * len(counts)
    return found


def _minimum_term(card: Tag) -> str | None:
    text = visible_text(card.get_text(" "))
    terms = [m.group("term") for m in _MINIMUM.finditer(text) if not m.group("negated")]
    return terms[0] if terms else None


def _offers_of(card: Tag) -> list[dict[str, Any]]:
    price_tag = next(p for p in card.find_all("p") if _CARD_PRICE.match(visible_text(p.text)))
    price_text = visible_text(price_tag.get_text(" "))
    price = usd_per_hour(_CARD_PRICE.match(price_text).group(0))  # type: ignore[union-attr]  # the card was picked for matching
    term = _minimum_term(card)
    if term is not None:
        raise ValueError(
            f"{_kind(card) or 'plan'} {_heading(card)!r} at {price_text!r} has a minimum term "
            f"({term!r}): not an hourly offer"
        )
    if price is None:
        return []
    counts, model = _gpus(card)
    specs = _spec_values(card, counts)
    offers = []
    for n, count in enumerate(counts):
        vram_total = specs.get("vram", [None] * len(counts))[n]
        offers.append({
            "offer_id": slug(_kind(card), _heading(card), f"{count}x", model),
            "gpu_raw": model,
            "gpu_count": count,
            "vram_gb": None if vram_total is None else vram_total / count,
            "pricing": Pricing.ON_DEMAND,
            "price_per_gpu_hour": price,
            "region": None,
            "available": True,  # listed at a price (LISTED_ONLY), not stock
            "ram_gb": specs.get("ram", [None] * len(counts))[n],
            "disk_gb": specs.get("disk", [None] * len(counts))[n],
            "tier": visible_text(_kind(card)).lower() or None,
        })  # fmt: skip
    return offers
