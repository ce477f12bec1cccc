"""Crusoe Cloud: the public pricing page (`GET https://www.crusoe.ai/cloud/pricing`), read as HTML,
and with Crusoe's keys its live capacity per instance type and location.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Crusoe's API is HMAC-signed and gives capacity, not prices (gpuhunt hard-codes the page's
  prices); the Webflow page is server-rendered and keyless.
- With `CRUSOE_SECRET_KEY`, `CRUSOE_ACCESS_KEY` and `CRUSOE_PROJECT_ID` set (gpuhunt's names)
  `fetch` reads the page, then `GET /v1alpha5/projects/{project}/compute/vms/types` and
  `GET /v1alpha5/capacities`, returned as one body `{"page": <html>, "types": [...],
  "capacities": [...]}`. Each request is signed as Crusoe's API reference describes
  (docs.crusoecloud.com/reference/api, "Generating a signature"): the payload
  `<version><path>\n<query>\n<METHOD>\n<RFC 3339 timestamp>\n` is HMAC-SHA256'd with the
  URL-safe base64-decoded secret key; the headers are `X-Crusoe-Timestamp: <timestamp>` and
  `Authorization: Bearer 1.0:<access key id>:<URL-safe base64 signature, no padding>`.
- Keyed offers: one per GPU instance type (`num_gpu` GPUs of `gpu_type` such as
  `H100-SXM-80GB`) and location of `capacities` (the largest `quantity` stated for it there),
  priced at the page's per-GPU price of the same model, form factor and memory, available while
  that quantity is above zero; a type with no capacity row is one offer without a location, not
  available; a type the page prices not is a reject naming its `gpu_type`.
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
  Iceland: country unknown). The page is a price list: `LISTED_ONLY` (the keyless path),
  listed at a price, not stock.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import httpx
import orjson
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes, is_replay
from scrapers.batch import RECORD_ERRORS, OfferBatch, number, offers_of_records, whole
from scrapers.errors import MissingCredentialsError, ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "crusoe"
ENV_KEY = "CRUSOE_SECRET_KEY"  # signs the requests; never sent
KEY_REQUIRED = False  # a public web page; the keys add live capacity
ACCESS_KEY_ENV = "CRUSOE_ACCESS_KEY"
"""The access key id the signature names (with the secret key and the project)."""
PROJECT_ENV = "CRUSOE_PROJECT_ID"
URL = "https://www.crusoe.ai/cloud/pricing"
API = "https://api.crusoecloud.com"
API_VERSION = "/v1alpha5"
SIGNATURE_VERSION = "1.0"
HOSTS = ("crusoe.ai", "api.crusoecloud.com")
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
    page = fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )
    if creds is None or is_replay(client):
        return page  # the page alone, or one recorded answer (page or keyed collection)
    access_key, project = (_setting(name) for name in (ACCESS_KEY_ENV, PROJECT_ENV))
    lists = {
        what: json_object_with_list(
            _signed_get(client, path, access_key, creds.api_key), "items", NAME, f"the {what}"
        )["items"]
        for what, path in (
            ("types", f"/projects/{project}/compute/vms/types"),
            ("capacities", "/capacities"),
        )
    }
    return orjson.dumps({"page": page.decode("utf-8", "replace"), **lists})


def _setting(name: str) -> str:
    """A Crusoe setting the keyed path needs besides the secret key, from the environment."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise MissingCredentialsError(
            f"{name} is not set: export it with {ENV_KEY}, or unset {ENV_KEY} to read the page"
        )
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
        raise MissingCredentialsError(f"{name} holds characters no Crusoe id has")
    return value


def signature(path: str, query: str, method: str, timestamp: str, secret_key: str) -> str:
    """Crusoe's request signature v1.0 (docs.crusoecloud.com/reference/api): HMAC-SHA256 of
    `<path>\n<query>\n<METHOD>\n<timestamp>\n` (`path` from the version on, `/v1alpha5/...`)
    keyed with the URL-safe base64-decoded secret key, URL-safe base64 without padding."""
    payload = f"{path}\n{query}\n{method.upper()}\n{timestamp}\n"
    try:
        key = base64.urlsafe_b64decode(secret_key + "=" * (-len(secret_key) % 4))
    except ValueError:
        raise MissingCredentialsError(f"{ENV_KEY} is not a base64 secret key") from None
    digest = hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def _signed_get(client: httpx.Client, path: str, access_key: str, secret_key: str) -> bytes:
    timestamp = datetime.now(UTC).replace(microsecond=0).isoformat()
    versioned = f"{API_VERSION}{path}"
    sig = signature(versioned, "", "GET", timestamp, secret_key)
    return fetch_bytes(
        client,
        "GET",
        f"{API}{versioned}",
        provider=NAME,
        headers={
            "Accept": "application/json",
            "X-Crusoe-Timestamp": timestamp,
            "Authorization": f"Bearer {SIGNATURE_VERSION}:{access_key}:{sig}",
        },
        auth_hint=f"check {ENV_KEY}, {ACCESS_KEY_ENV} and {PROJECT_ENV}, or unset {ENV_KEY}",
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
    if payload.lstrip()[:1] == b"{":
        return _parse_keyed(payload, observed_at)
    return _parse_page(payload, observed_at)


def _parse_page(payload: bytes, observed_at: datetime) -> ParseResult:
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


# with the keys: the page's prices on the live capacity of each instance type and location

_GPU_TYPE_FORMS = {"sxm": "SXM", "pcie": "PCIe"}
_GPU_TYPE_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)gb$", re.IGNORECASE)
PriceKey = tuple[str, str | None, float | None]
"""(model, form factor, VRAM GB): `H100-SXM-80GB` and the page's `NVIDIA H100` `HGX` `80GB`."""


def _parse_keyed(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: the keyed collection is not JSON ({exc})") from exc
    if not isinstance(body, dict) or not isinstance(body.get("page"), str):
        raise ProviderPayloadError(f"{NAME}: the keyed collection has no 'page'")
    types, capacities = body.get("types"), body.get("capacities")
    if not isinstance(types, list) or not isinstance(capacities, list):
        raise ProviderPayloadError(f"{NAME}: the keyed collection's types/capacities are no lists")
    prices: dict[PriceKey, list[Any]] = {}
    for offer in _parse_page(body["page"].encode(), observed_at).table.to_pylist():
        words = str(offer["gpu_raw"]).split()  # `NVIDIA A100 PCIe`: the form is the last word
        form = words[-1] if words[-1] in FORM_TAGS.values() and len(words) > 1 else None
        key = (words[-2 if form else -1].upper(), form, offer["vram_gb"])
        prices.setdefault(key, []).append(offer)
    quantity: dict[str, dict[str, int]] = {}
    for row in capacities:
        try:
            type_name, location, count = row["type"], row["location"], row["quantity"]
            if not isinstance(type_name, str) or not isinstance(location, str) or not location:
                raise TypeError("type and location must be names")
            at = quantity.setdefault(type_name, {})
            at[location] = max(at.get(location, 0), whole("quantity", count))
        except RECORD_ERRORS as exc:
            raise ProviderPayloadError(
                f"{NAME}: a capacity row is broken ({reason_of(exc)}): {str(row)[:80]}"
            ) from exc
    return offers_of_records(
        NAME,
        observed_at,
        types,
        lambda t: _type_offers(t, prices, quantity.get(str(t.get("product_name")), {})),
        id_of=lambda t: t.get("product_name"),
    )


def _price_key(gpu_type: str) -> PriceKey:
    parts = re.split(r"[-_]", gpu_type)
    form = next((_GPU_TYPE_FORMS[p.lower()] for p in parts if p.lower() in _GPU_TYPE_FORMS), None)
    memory = next((float(m.group(1)) for p in parts if (m := _GPU_TYPE_MEMORY.match(p))), None)
    return parts[0].upper(), form, memory


def _type_offers(
    spec: dict[str, Any], prices: dict[PriceKey, list[Any]], quantity: dict[str, int]
) -> list[dict[str, Any]]:
    count = whole("num_gpu", spec.get("num_gpu", 0))
    gpu_type = spec.get("gpu_type")
    if count == 0 or not gpu_type:
        return []  # a CPU type
    priced = prices.get(_price_key(str(gpu_type)))
    if not priced:
        raise ValueError(f"gpu_type {gpu_type!r} has no price on the page")
    name = spec["product_name"]
    places: list[tuple[str | None, bool]] = [
        (location, qty > 0) for location, qty in quantity.items()
    ] or [(None, False)]
    return [
        {
            "offer_id": f"{name}@{location}" if location else name,
            "gpu_raw": page["gpu_raw"],
            "gpu_count": count,
            "vram_gb": page["vram_gb"],
            "pricing": page["pricing"],
            "price_per_gpu_hour": page["price_per_gpu_hour"],
            "region": location,
            "available": available,
            "vcpus": number("cpu_cores", spec.get("cpu_cores")),
            "ram_gb": number("memory_gb", spec.get("memory_gb")),
            "disk_gb": number("disk_gb", spec.get("disk_gb")),
        }
        for page in priced
        for location, available in places
    ]
