"""CoreWeave: the public pricing page (`GET https://www.coreweave.com/pricing`), read as HTML.

Quirks (see docs/pages/notes/provider-samples.md, "CoreWeave", and tests/fixtures/README.md):
- No pricing API exists; the Webflow page is server-rendered, so a plain GET returns the rows
  (becloudready/gpu-price `sources/coreweave.py`). Its markup and labels change often, so columns
  are found by meaning, never by position or exact text: a header label is normalised (footnote
  marks dropped, case and punctuation folded) and read as words, e.g. `On-Demand Price (Per
  Hour)`, `Spot Price (Per Hour)`, `Inference Single GPU Price(Per Hour)²` (2026 page). A GPU
  table without an on-demand or spot column (an older layout) and a page on which no GPU row
  yields an offer are a `ProviderPayloadError`, never an empty success.
- On-Demand and Spot prices are USD per hour for the whole node: 8 GPUs for HGX/A100/L40(S)/RTX
  PRO 6000, 4 for GB200/GB300 NVL72, 1 for GH200, as the GPU Count column says. HGX H100 at
  $49.24/h is $6.155 per GPU-hour (PrashantSedhain/coreweave-pricing-tracker
  `data/2026-10-07.json`).
- "Inference Single GPU Price" (North America only) is another product's per-GPU price, never
  an offer: it only cross-checks node price / GPU count, which catches a misread GPU count.
- Footnote markers sit anywhere (`²` glued to a header): superscripts and footnote signs are
  dropped before any label or number is read. The live page serves the NVL72 GPU Count as plain
  text `4^1` (its own script turns `^1` into a superscript in the browser; getcomputable/gpu-index
  `tests/fixtures/observatory/coreweave/pricing.html`), and scrapes of the rendered page read it
  as `41` (PrashantSedhain/coreweave-pricing-tracker `data/2026-10-07.json`, `"gpuCount": "41"`).
  So a count reads `<n>^<mark>` as n, and a count above `MAX_GPUS_PER_NODE` that ends in one of
  the page's footnote numbers (`<p><sup>1</sup> Each instance is comprised of 2 GB200 or GB300
  Superchips...`) reads as the digits before it; any other count above it is a reject.
- `Contact sales` (a link), `N/A` or an empty cell means no price in that column: no offer for
  it, the row's other prices stay (HGX B300 and the RTX PRO 6000 Standard Memory variant are
  priced for spot only in Oct 2026; GB300 NVL72 not at all).
- One model can have several rows in one region (`RTX PRO 6000 Blackwell Server Edition (High
  Memory)` / `(Standard Memory)`: 1,024 vs 512 GB of RAM); each keeps the page's spelling, and
  rows whose names still collide get the columns that tell them apart in their `offer_id`.
- VRAM is per GPU as printed (HGX B300: 270 GB), kept over the catalog's nominal figure.
- Spot means preemptible Spot Node Pools at a listed price, not a bid; superchips have none
  (https://docs.coreweave.com/platform/capacity-plans/spot-node-pools).
- The page shows no stock. `available=True` means only "listed at a price on the public page".
- `NVIDIA A100` is an 80 GB part only through its VRAM column; the catalog resolves it with it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, cast

import httpx
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing, Reject, reason_of

NAME = "coreweave"
ENV_KEY = None
KEY_REQUIRED = False  # a public web page
URL = "https://www.coreweave.com/pricing"
INTERVAL = timedelta(hours=6)  # a published price page: no stock, prices change rarely
CURRENCY = "USD"
GB_PER_TB = 1000
"""Local Storage is in decimal TB: 7.68 and 61.44 (8 x 7.68) are NVMe drive sizes [assumption]."""
INFERENCE_TOLERANCE_USD = 0.01
"""The page rounds node price / GPU count to the cent ($49.24 / 8 = 6.155 shows as $6.16)."""
MAX_GPUS_PER_NODE = 16
"""The most GPUs one node listed on the page holds (HGX: 8, NVL72 compute tray: 4); a larger
count is a footnote mark read into the number."""
NO_PRICE = frozenset({"", "n/a", "na", "-", "\u2013", "\u2014", "contact sales", "contact us"})
"""Cell texts (case folded) that mean "no price in this column"."""

Column = Literal["model", "count", "vram", "vcpus", "ram", "storage", "on_demand", "spot",
                 "inference"]  # fmt: skip
PRICE_COLUMNS: tuple[tuple[Column, Pricing], ...] = (
    ("on_demand", Pricing.ON_DEMAND),
    ("spot", Pricing.SPOT),
)
DISTINGUISHING: tuple[Column, ...] = ("ram", "vram", "count", "vcpus", "storage")
"""Columns that tell apart two rows of the same name in one region, in this order."""

_REGION_LABEL = re.compile(r"^\s*REGION:\s*(\S.*?)\s*$", re.IGNORECASE)
_PRICE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)(?:\s*/\s*h(?:ou)?r)?$", re.IGNORECASE)
_HTML_END = re.compile(rb"</html\s*>", re.IGNORECASE)
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_FOOTNOTE = re.compile("[\u00b9\u00b2\u00b3\u2070-\u209f*\u2020\u2021]")
"""Superscript digits and footnote signs, wherever they sit."""
_NON_WORD = re.compile(r"[^a-z0-9]+")
_CARET_FOOTNOTE = re.compile(r"^(\d+)\s*\^\s*\S+$")
"""`4^1`: a count with its footnote mark as the live page serves it."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


@dataclass(frozen=True, slots=True)
class _Row:
    """One GPU row as served, with its table's columns and region."""

    tag: Tag
    columns: list[Column | None]
    region: str | None


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    if not _HTML_END.search(payload):
        # A cut body still parses (html.parser closes open tags) but would silently drop rows.
        raise ProviderPayloadError(f"{NAME}: page is truncated (no closing </html> tag)")
    soup = BeautifulSoup(payload, "html.parser")
    footnotes = _footnote_numbers(soup)
    rows: list[_Row] = []
    for table in soup.select(".table-v2"):
        labels = _header_labels(table)
        columns = [_column_of(label) for label in labels]
        if "model" not in columns or not any("gpu" in _words(label) for label in labels):
            continue  # CPU and storage tables
        if "on_demand" not in columns and "spot" not in columns:
            raise ProviderPayloadError(
                f"{NAME}: a GPU table has no on-demand or spot price column (headers: "
                f"{', '.join(labels)}) at {URL}; the page layout changed, update "
                "scrapers/coreweave.py"
            )
        region = _region_of(table)
        rows += [_Row(row, columns, region) for row in table.select(".table-row-v2")]
    ids = [_row_id(row) for row in rows]
    batch = OfferBatch(NAME, observed_at, raw_of=lambda i: str(rows[i].tag), id_of=ids.__getitem__)
    read: list[tuple[int, dict[Column, str]]] = []
    for i, row in enumerate(rows):
        try:
            read.append((i, _row_cells(row)))
        except ValueError as exc:
            batch.reject(i, reason_of(exc))
    offer_ids = _offer_ids([(rows[i], cells) for i, cells in read])
    for (i, cells), offer_id in zip(read, offer_ids, strict=True):
        try:
            batch.add(i, _offers_of(cells, offer_id, rows[i].region, footnotes))
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(_nothing_parsed(len(rows), result.rejects))
    return result


def _nothing_parsed(rows_found: int, rejects: list[Reject]) -> str:
    if rows_found == 0:
        what = "no GPU rows under a 'GPU Model' table header"
    elif rejects:
        what = f"{rows_found} GPU rows, none usable ({len(rejects)} rejected, first: " \
               f"{rejects[0].reason})"  # fmt: skip
    else:
        what = f"{rows_found} GPU rows, none with a price"
    return f"{NAME}: {what} at {URL}; the page markup changed, update scrapers/coreweave.py"


def _footnote_numbers(soup: BeautifulSoup) -> frozenset[str]:
    """The numbers of the page's footnotes: a paragraph opening with `<sup>1</sup>`."""
    numbers = set()
    for paragraph in soup.find_all("p"):
        first = next((c for c in paragraph.children if str(c).strip()), None)
        if isinstance(first, Tag) and first.name == "sup":
            mark = first.get_text(strip=True)
            if mark.isdigit():
                numbers.add(mark)
    return frozenset(numbers)


def _gpu_count(text: str, footnotes: frozenset[str]) -> int:
    """A node's GPU count from `8`, `4^1` (mark as plain text) or `41` (mark read as a digit)."""
    caret = _CARET_FOOTNOTE.match(text)
    digits = caret.group(1) if caret else text.replace(",", "")
    try:
        count = float(digits)
    except ValueError:
        raise ValueError(f"count {text!r} is not a number") from None
    if not count.is_integer() or count < 1:
        raise ValueError(f"GPU count {count:g} is not a whole number of GPUs")
    if count <= MAX_GPUS_PER_NODE:
        return int(count)
    for mark in sorted(footnotes, key=len, reverse=True):
        head = digits[: -len(mark)]
        if digits.endswith(mark) and head.isdigit() and 1 <= int(head) <= MAX_GPUS_PER_NODE:
            return int(head)
    raise ValueError(
        f"GPU count {text!r} is more than a node holds ({MAX_GPUS_PER_NODE}) and ends in none of "
        f"the page's footnote numbers ({', '.join(sorted(footnotes)) or 'none'})"
    )


def _words(text: str) -> list[str]:
    """Lower-case words of `text` with footnote marks and punctuation gone."""
    return _NON_WORD.sub(" ", _FOOTNOTE.sub("", text).lower()).split()


def _column_of(label: str) -> Column | None:
    """What a header label means, by its words; None for a column we do not read."""
    words = _words(label)
    joined = " ".join(words)
    if "inference" in words:
        return "inference"
    if "spot" in words:
        return "spot"
    if "on demand" in joined or "ondemand" in words:
        return "on_demand"
    for word, column in (("model", "model"), ("count", "count"), ("vram", "vram"),
                         ("vcpus", "vcpus"), ("vcpu", "vcpus"), ("ram", "ram"),
                         ("storage", "storage")):  # fmt: skip
        if word in words:
            return cast(Column, column)
    return None


def _cells(grid: Tag | None) -> list[Tag]:
    if grid is None:
        return []
    found = grid.find_all(class_="table-v2-cell", recursive=False)
    return [cell for cell in found if isinstance(cell, Tag)]


def _text(tag: Tag) -> str:
    """The text a reader sees, without footnote superscripts or signs."""
    clean = copy.copy(tag)
    for sup in clean.find_all("sup"):
        sup.decompose()
    return " ".join(_FOOTNOTE.sub("", clean.get_text(" ", strip=True)).split())


def _header_labels(table: Tag) -> list[str]:
    grid = table.select_one(".table-v2-header .table-grid")
    return [" ".join(cell.get_text(" ", strip=True).split()) for cell in _cells(grid)]


def _region_of(table: Tag) -> str | None:
    label = table.find_previous(string=_REGION_LABEL)
    if label is None:
        return None
    match = _REGION_LABEL.match(str(label))
    return match.group(1).title() if match else None


def _model_name(cell: Tag) -> str:
    heading = cell.select_one(".table-model-name") or cell.find(re.compile(r"^h[1-6]$"))
    return _text(heading) if isinstance(heading, Tag) else _text(cell)


def _slug(*parts: str) -> str:
    return "-".join(_NON_SLUG.sub("-", part.lower()).strip("-") for part in parts)


def _row_id(row: _Row) -> str | None:
    heading = row.tag.select_one(".table-model-name")
    return _slug(_text(heading), row.region or "unknown-region") if heading is not None else None


def _row_cells(row: _Row) -> dict[Column, str]:
    """The text of each cell we read, by what its column means."""
    cells = _cells(row.tag.select_one(".table-grid"))
    if len(cells) != len(row.columns):
        raise ValueError(f"row has {len(cells)} cells for {len(row.columns)} column labels")
    found: dict[Column, str] = {}
    for column, cell in zip(row.columns, cells, strict=True):
        if column is not None:
            found[column] = _model_name(cell) if column == "model" else _text(cell)
    return found


def _number(cells: dict[Column, str], column: Column) -> float | None:
    if column not in cells:
        return None
    text = cells[column]
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise ValueError(f"{column} {text!r} is not a number") from None


def _price(cells: dict[Column, str], column: Column) -> float | None:
    """USD from `$49.24`; None for an absent column or `Contact sales`, `N/A`, an empty cell."""
    text = cells.get(column, "")
    if text.lower() in NO_PRICE:
        return None
    match = _PRICE.match(text)
    if match is None:
        raise ValueError(f"{column} price {text!r} is not a USD amount like $49.24")
    return float(match.group(1).replace(",", ""))


def _offer_ids(rows: list[tuple[_Row, dict[Column, str]]]) -> list[str]:
    """`<model>-<region>`, plus the columns that differ where one name repeats in a region."""
    base = [_slug(cells.get("model", ""), row.region or "unknown-region") for row, cells in rows]
    ids = list(base)
    for slug in {s for s in base if base.count(s) > 1}:
        group = [i for i, s in enumerate(base) if s == slug]
        differing = [
            column for column in DISTINGUISHING if len({rows[i][1].get(column) for i in group}) > 1
        ]
        for i in group:
            cells = rows[i][1]
            parts = [_slug(column, cells.get(column, "")) for column in differing]
            ids[i] = "-".join([slug, *parts])
    return ids


def _offers_of(
    cells: dict[Column, str], offer_id: str, region: str | None, footnotes: frozenset[str]
) -> list[dict[str, Any]]:
    model = cells.get("model", "")
    if not model:
        raise ValueError("row has no GPU model")
    prices = {pricing: _price(cells, column) for column, pricing in PRICE_COLUMNS}
    if all(price is None for price in prices.values()):
        return []  # unpriced (`Contact sales`, GB300 NVL72 in 2026): no offer, nothing to check
    if "count" not in cells:
        raise KeyError("GPU Count")
    gpu_count = _gpu_count(cells["count"], footnotes)
    storage_tb = _number(cells, "storage")
    common: dict[str, Any] = {
        "offer_id": offer_id,
        "gpu_raw": model,
        "gpu_count": gpu_count,
        "vram_gb": _number(cells, "vram"),
        "region": region,
        "available": True,  # listed at a price; stock is not shown (see module docstring)
        "vcpus": _number(cells, "vcpus"),
        "ram_gb": _number(cells, "ram"),
        "disk_gb": None if storage_tb is None else storage_tb * GB_PER_TB,
    }
    on_demand, per_gpu = prices[Pricing.ON_DEMAND], _price(cells, "inference")
    if on_demand is not None and per_gpu is not None:
        derived = on_demand / gpu_count
        if abs(derived - per_gpu) > INFERENCE_TOLERANCE_USD:
            raise ValueError(
                f"on-demand ${on_demand:.2f} / {gpu_count} GPUs = ${derived:.3f} per GPU "
                f"disagrees with the page's inference price ${per_gpu:.2f} per GPU"
            )
    return [
        {"price_per_hour": price, "pricing": pricing, **common}
        for pricing, price in prices.items()
        if price is not None
    ]
