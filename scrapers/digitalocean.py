"""DigitalOcean GPU Droplets: the sizes API with a token, else the public pricing docs page.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- With `DIGITALOCEAN_TOKEN` set (DigitalOcean's own variable, as doctl and its Terraform
  provider read it) `fetch` reads the sizes API (`GET https://api.digitalocean.com/v2/sizes
  ?per_page=500`, `Authorization: Bearer`, every page by `links.pages.next`, joined into one
  `{"sizes": [...]}` body); without it, the keyless docs page
  (`GET https://docs.digitalocean.com/products/droplets/details/pricing/`, which
  getcomputable/gpu-index reads too). `parse` takes either body: JSON with `sizes` is the API.
- API: a GPU size has `gpu_info{count, vram{amount, unit: "gib"}, model: "nvidia_h100"}`
  (`vram` is the Droplet's total: 640 GiB for 8 H100, so 80 per GPU); sizes without `gpu_info`
  are CPU Droplets, no offers. `price_hourly` is USD per Droplet-hour, `memory` MB (read as MiB,
  / 1024 = GB), `disk` GB. One on-demand offer per region of `regions` (where the size can be
  created now: live availability, `available` false means none); a size whose `regions` list is
  empty, or that is not `available`, is one offer without a region, not available. The API has
  no spot prices.
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
- The page is a published price list: `LISTED_ONLY` (the keyless path), `available=True` means
  "listed at a price" (no stock). API offers carry a region and live availability instead.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes, is_replay
from scrapers.batch import OfferBatch, id_field, number, offers_of_records, whole
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "digitalocean"
ENV_KEY = "DIGITALOCEAN_TOKEN"  # DigitalOcean's own variable (doctl, Terraform)
KEY_REQUIRED = False  # a public docs page; a token switches to the sizes API
URL = "https://docs.digitalocean.com/products/droplets/details/pricing/"
API_URL = "https://api.digitalocean.com/v2/sizes?per_page=500"
HOSTS = ("docs.digitalocean.com", "api.digitalocean.com")
MAX_PAGES = 20
"""Pages of sizes read at most (one holds 500; DigitalOcean has ~150 sizes)."""
MIB_PER_GB = 1024
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
    if creds is not None:
        return _sizes(client, creds)
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public docs page refused the request (bot protection?); retry later",
    )


def _sizes(client: httpx.Client, creds: Credentials) -> bytes:
    """Every page of `/v2/sizes`, joined into one `{"sizes": [...]}` body."""
    sizes: list[Any] = []
    url: str | None = API_URL
    for _ in range(MAX_PAGES):
        if url is None:
            return orjson.dumps({"sizes": sizes})
        page = fetch_bytes(
            client,
            "GET",
            url,
            provider=NAME,
            headers={"Accept": "application/json", "Authorization": f"Bearer {creds.api_key}"},
            auth_hint=f"check {ENV_KEY} or unset it (the docs page needs no token)",
        )
        if is_replay(client):
            return page  # one recorded answer: its next-page link ends the listing
        body = json_object_with_list(page, "sizes", NAME, where="a sizes page")
        sizes += body["sizes"]
        pages = (body.get("links") or {}).get("pages") or {}
        url = pages.get("next") if isinstance(pages, dict) else None
    raise ProviderPayloadError(f"{NAME}: the sizes listing is longer than {MAX_PAGES} pages")


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
    if payload.lstrip()[:1] == b"{":
        return _parse_sizes(payload, observed_at)
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


# the sizes API


def _parse_sizes(payload: bytes, observed_at: datetime) -> ParseResult:
    sizes = json_object_with_list(payload, "sizes", NAME)["sizes"]
    return offers_of_records(NAME, observed_at, sizes, _size_offers, id_of=id_field("slug"))


def _size_offers(size: dict[str, Any]) -> list[dict[str, Any]]:
    gpu = size.get("gpu_info")
    if not gpu:
        return []  # a CPU Droplet
    count = whole("gpu_info.count", gpu["count"])
    vram = gpu.get("vram") or {}
    if vram and str(vram.get("unit", "")).lower() not in ("gib", "gb"):
        raise ValueError(f"gpu_info.vram unit {vram.get('unit')!r} is not gib")
    total_vram = number("gpu_info.vram.amount", vram.get("amount"))
    memory_mb = number("memory", size.get("memory"))
    common: dict[str, Any] = {
        "gpu_raw": str(gpu["model"]).replace("_", " "),
        "gpu_count": count,
        "vram_gb": None if total_vram is None or count <= 0 else total_vram / count,
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": size["price_hourly"],
        "vcpus": size.get("vcpus"),
        "ram_gb": None if memory_mb is None else memory_mb / MIB_PER_GB,
        "disk_gb": size.get("disk"),
    }
    slug_ = size["slug"]
    regions = size["regions"]
    if not isinstance(regions, list):
        raise TypeError(f"regions is not a list: {regions!r}")
    if size.get("available") is False or not regions:
        return [{**common, "offer_id": slug_, "region": None, "available": False}]
    return [
        {**common, "offer_id": f"{slug_}@{region}", "region": region, "available": True}
        for region in regions
    ]
