"""CoreWeave: the public pricing page (`GET https://www.coreweave.com/pricing`), read as HTML.

Quirks (see shared/provider-samples/README.md, "CoreWeave"):
- No pricing API exists; the Webflow page is server-rendered, so a plain GET returns the rows
  (becloudready/gpu-price `sources/coreweave.py`). Its markup changes often (README: three layouts
  seen in public scrapers), so cells are read by their header labels, never by position, and a
  page on which no GPU row yields an offer is a `ProviderPayloadError`, never an empty success.
- On-Demand and Spot prices are USD per hour for the whole node: 8 GPUs for HGX/A100/L40(S)/RTX
  PRO 6000, 4 for GB200/GB300 NVL72, 1 for GH200, as the GPU Count column says. HGX H100 at
  $49.24/h is $6.155 per GPU-hour (PrashantSedhain/coreweave-pricing-tracker
  `data/2026-08-22.json`).
- "Inference Single GPU Price" (North America only) is per GPU and not an offer; it cross-checks
  the node price / GPU count, which catches a misread GPU count.
- The NVL72 GPU Count carries a footnote, `4<sup>1</sup>`, which text extraction reads as `41`
  (same tracker, 2026-08 data): superscripts are dropped before any number is read.
- Missing prices are non-numeric cells (all of GB300 NVL72, HGX B300 on-demand in Aug 2026); the
  sample renders them `N/A` [README: assumption]. They are skipped: no offer, no reject.
- Spot means preemptible Spot Node Pools at a listed price, not a bid; superchips have none
  (https://docs.coreweave.com/platform/capacity-plans/spot-node-pools).
- The page shows no stock. `available=True` means only "listed at a price on the public page";
  whether a node can be had right now is unknown (README cheat sheet: availability "not shown").
- `NVIDIA A100` is an 80 GB part only through its VRAM column; the catalog resolves it with it.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime
from typing import Any

import httpx
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.errors import ProviderPayloadError
from scrapers.models import Offer, ParseResult, Pricing, Reject

NAME = "coreweave"
ENV_KEY = None
KEY_REQUIRED = False  # a public web page
URL = "https://www.coreweave.com/pricing"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
GB_PER_TB = 1000
"""Local Storage is in decimal TB: 7.68 and 61.44 (8 x 7.68) are NVMe drive sizes [assumption]."""
INFERENCE_TOLERANCE_USD = 0.01
"""The page rounds node price / GPU count to the cent ($49.24 / 8 = 6.155 shows as $6.16)."""

GPU_MODEL = "GPU Model"
GPU_COUNT = "GPU Count"
VRAM = "VRAM (GB)"
VCPUS = "vCPUs"
RAM = "System RAM (GB)"
STORAGE = "Local Storage (TB)"
ON_DEMAND = "On-Demand Price"
SPOT = "Spot Price"
INFERENCE = "Inference Single GPU Price"
PRICE_COLUMNS = ((ON_DEMAND, Pricing.ON_DEMAND), (SPOT, Pricing.SPOT))
MISSING_PRICES = frozenset({"", "n/a", "na", "-", "\u2013", "\u2014"})

_REGION_LABEL = re.compile(r"^\s*REGION:\s*(\S.*?)\s*$", re.IGNORECASE)
_PRICE = re.compile(r"^\$\s*(\d[\d,]*(?:\.\d+)?)(?:\s*/\s*h(?:ou)?r)?$", re.IGNORECASE)
_HTML_END = re.compile(rb"</html\s*>", re.IGNORECASE)
_NON_SLUG = re.compile(r"[^a-z0-9]+")


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        timeout=TIMEOUT,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    if not _HTML_END.search(payload):
        # A cut body still parses (html.parser closes open tags) but would silently drop rows.
        raise ProviderPayloadError(f"{NAME}: page is truncated (no closing </html> tag)")
    soup = BeautifulSoup(payload, "html.parser")
    result = ParseResult()
    rows_found = 0
    for table in soup.select(".table-v2"):
        labels = _header_labels(table)
        if GPU_MODEL not in labels:
            continue  # CPU and storage tables
        region = _region_of(table)
        for row in table.select(".table-row-v2"):
            rows_found += 1
            try:
                result.offers.extend(_offers_of(row, labels, region, observed_at))
            except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
                result.rejects.append(
                    Reject(
                        provider=NAME,
                        record_id=_row_id(row, region),
                        reason=_reason(exc),
                        raw=str(row),
                    )
                )
    if not result.offers:
        raise ProviderPayloadError(_nothing_parsed(rows_found, result.rejects))
    return result


def _nothing_parsed(rows_found: int, rejects: list[Reject]) -> str:
    if rows_found == 0:
        what = f"no GPU rows under a '{GPU_MODEL}' table header"
    elif rejects:
        what = f"{len(rejects)} GPU rows, none usable (first: {rejects[0].reason})"
    else:
        what = f"{rows_found} GPU rows, none with a price"
    return f"{NAME}: {what} at {URL}; the page markup changed, update scrapers/coreweave.py"


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing column {exc.args[0]!r}"
    return str(exc).replace("\n", "; ")


def _cells(grid: Tag | None) -> list[Tag]:
    if grid is None:
        return []
    found = grid.find_all(class_="table-v2-cell", recursive=False)
    return [cell for cell in found if isinstance(cell, Tag)]


def _text(tag: Tag) -> str:
    return " ".join(tag.get_text(" ", strip=True).split())


def _header_labels(table: Tag) -> list[str]:
    return [_text(cell) for cell in _cells(table.select_one(".table-v2-header .table-grid"))]


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


def _row_id(row: Tag, region: str | None) -> str | None:
    heading = row.select_one(".table-model-name")
    return _slug(_text(heading), region or "unknown-region") if heading is not None else None


def _row_cells(row: Tag, labels: list[str]) -> dict[str, Tag]:
    clean = copy.copy(row)  # footnote superscripts go; `raw` keeps the row as served
    for sup in clean.find_all("sup"):
        sup.decompose()
    cells = _cells(clean.select_one(".table-grid"))
    if len(cells) != len(labels):
        raise ValueError(f"row has {len(cells)} cells for {len(labels)} column labels")
    return dict(zip(labels, cells, strict=True))


def _number(cells: dict[str, Tag], label: str) -> float | None:
    if label not in cells:
        return None
    text = _text(cells[label])
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise ValueError(f"{label} {text!r} is not a number") from None


def _price(cells: dict[str, Tag], label: str) -> float | None:
    """USD from `$49.24`; None for an absent column or a placeholder such as `N/A`."""
    if label not in cells:
        return None
    text = _text(cells[label])
    if text.lower() in MISSING_PRICES:
        return None
    match = _PRICE.match(text)
    if match is None:
        raise ValueError(f"{label} {text!r} is not a USD amount like $49.24")
    return float(match.group(1).replace(",", ""))


def _offers_of(
    row: Tag, labels: list[str], region: str | None, observed_at: datetime
) -> list[Offer]:
    cells = _row_cells(row, labels)
    model = _model_name(cells[GPU_MODEL])
    if not model:
        raise ValueError(f"row has no {GPU_MODEL}")
    count = _number(cells, GPU_COUNT)
    if count is None:
        raise KeyError(GPU_COUNT)
    if not count.is_integer() or count < 1:
        raise ValueError(f"{GPU_COUNT} {count:g} is not a whole number of GPUs")
    gpu_count = int(count)
    storage_tb = _number(cells, STORAGE)
    common: dict[str, Any] = {
        "provider": NAME,
        "offer_id": _slug(model, region or "unknown-region"),
        "gpu_raw": model,
        "vram_gb": _number(cells, VRAM),
        "region": region,
        "available": True,  # listed at a price; stock is not shown (see module docstring)
        "observed_at": observed_at,
        "vcpus": _number(cells, VCPUS),
        "ram_gb": _number(cells, RAM),
        "disk_gb": None if storage_tb is None else storage_tb * GB_PER_TB,
    }
    on_demand = _price(cells, ON_DEMAND)
    per_gpu = _price(cells, INFERENCE)
    if on_demand is not None and per_gpu is not None:
        derived = on_demand / gpu_count
        if abs(derived - per_gpu) > INFERENCE_TOLERANCE_USD:
            raise ValueError(
                f"{ON_DEMAND} ${on_demand:.2f} / {gpu_count} GPUs = ${derived:.3f} per GPU "
                f"disagrees with the page's {INFERENCE} ${per_gpu:.2f}"
            )
    offers = []
    for label, pricing in PRICE_COLUMNS:
        price = on_demand if label == ON_DEMAND else _price(cells, label)
        if price is not None:
            offers.append(
                Offer.from_instance_price(
                    price_per_hour=price, gpu_count=gpu_count, pricing=pricing, **common
                )
            )
    return offers
