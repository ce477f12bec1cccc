"""Hot Aisle: the available-VM API with a team token, else the public pricing page.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- With `HOTAISLE_API_KEY` and `HOTAISLE_TEAM_HANDLE` set (the names gpuhunt reads) `fetch` reads
  `GET https://admin.hotaisle.app/api/teams/{team}/virtual_machines/available/` with
  `Authorization: Token <key>`; without the key, the keyless pricing page (Astro,
  server-rendered). A key without a team handle is a configuration error naming the variable.
  `parse` takes either body: a JSON list (or `null`) is the API. AMD only.
- API: a list of the VMs that can be created now (live availability: every one is available),
  `null` when none is (gpuhunt's test): no offers, so the run keeps the last good snapshot.
  `OnDemandPrice` is US cents per VM-hour; `Specs`: `gpus[{count, model}]`, `cpu_cores`
  (cores, not vCPUs: not published), `ram_capacity`/`disk_capacity` bytes (/ 2^30 = GB, as
  gpuhunt reads them). One on-demand offer per VM shape (GPU count and model, cores, RAM, disk),
  in us-michigan-1; the same shape listed twice at one price is one offer (another price: a
  reject). No VRAM in the answer: the catalog's (MI300X 192 GB).
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
- One location (us-michigan-1, `data/hotaisle_regions.csv`: US). The page is a price list:
  `LISTED_ONLY` (the keyless path), listed at a price, not stock.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson
from bs4 import BeautifulSoup, Tag

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, decimal, offers_of_records, whole
from scrapers.errors import MissingCredentialsError, ProviderPayloadError
from scrapers.models import ParseResult, Pricing, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "hotaisle"
ENV_KEY = "HOTAISLE_API_KEY"
KEY_REQUIRED = False  # a public web page; a team token switches to the API
TEAM_ENV = "HOTAISLE_TEAM_HANDLE"
"""The team the token belongs to: the API's path names it (not a secret)."""
URL = "https://hotaisle.xyz/pricing"
API_URL = "https://admin.hotaisle.app/api/teams/{team}/virtual_machines/available/"
HOSTS = ("hotaisle.xyz", "admin.hotaisle.app")
LOCATION = "us-michigan-1"
CENTS_PER_DOLLAR = 100
BYTES_PER_GB = 2**30
INTERVAL = timedelta(hours=6)  # a published price list: no stock, prices change rarely
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source
GB_PER_TB = 1000

_TEAM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
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
    if creds is not None:
        answer = fetch_bytes(
            client,
            "GET",
            API_URL.format(team=_team()),
            provider=NAME,
            headers={"Accept": "application/json", "Authorization": f"Token {creds.api_key}"},
            auth_hint=f"check {ENV_KEY} and {TEAM_ENV}, or unset the key (the page needs none)",
        )
        if not answer.strip():
            raise ProviderPayloadError(f"{NAME}: the available-VM answer is empty (not even null)")
        return answer
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "text/html"},
        auth_hint="the public pricing page refused the request (bot protection?); retry later",
    )


def _team() -> str:
    """The team handle of `TEAM_ENV`; a configuration error when missing or not a handle."""
    team = os.environ.get(TEAM_ENV, "").strip()
    if not team:
        raise MissingCredentialsError(
            f"{TEAM_ENV} is not set: export it with {ENV_KEY} (the API path names the team), "
            f"or unset {ENV_KEY} to read the pricing page"
        )
    if not _TEAM.match(team):
        raise MissingCredentialsError(f"{TEAM_ENV} is not a team handle (letters, digits, -_.)")
    return team


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
    if payload.lstrip()[:1] == b"[" or payload.strip() == b"null":
        return _parse_available(payload, observed_at)
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


# the API: available VMs


def _parse_available(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        vms = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: the available-VM answer is not JSON ({exc})") from exc
    if vms is None:
        vms = []  # no VM can be created now
    if not isinstance(vms, list):
        raise ProviderPayloadError(f"{NAME}: the available-VM answer is not a list")
    seen: set[tuple[str, float]] = set()

    def offers_of(vm: dict[str, Any]) -> list[dict[str, Any]]:
        offer = _vm_offer(vm)
        key = (offer["offer_id"], offer["price_per_hour"])
        if key in seen:
            return []  # the same shape at the same price: one offer
        seen.add(key)
        return [offer]

    return offers_of_records(NAME, observed_at, vms, offers_of, id_of=_vm_id)


def _vm_shape(vm: dict[str, Any]) -> tuple[int, str, int, float | None, float | None]:
    specs = vm["Specs"]
    gpus = specs["gpus"]
    if not isinstance(gpus, list) or len(gpus) != 1:
        raise ValueError(f"Specs.gpus must name one GPU model, got {gpus!r}")
    model = gpus[0]["model"]
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"Specs.gpus[0].model must name a GPU, got {model!r}")
    cores = whole("Specs.cpu_cores", specs["cpu_cores"])
    ram, disk = (specs.get(name) for name in ("ram_capacity", "disk_capacity"))
    return (
        whole("Specs.gpus[0].count", gpus[0]["count"]),
        model.strip(),
        cores,
        None if ram is None else whole("Specs.ram_capacity", ram) / BYTES_PER_GB,
        None if disk is None else whole("Specs.disk_capacity", disk) / BYTES_PER_GB,
    )


def _vm_id(vm: Any) -> str:
    count, model, cores, ram, disk = _vm_shape(vm)
    return slug(f"{count}x", model, f"{cores}c", f"{ram or 0:g}gb", f"{disk or 0:g}gb")


def _vm_offer(vm: dict[str, Any]) -> dict[str, Any]:
    count, model, _, ram, disk = _vm_shape(vm)
    return {
        "offer_id": f"{_vm_id(vm)}@{LOCATION}",
        "gpu_raw": model,
        "gpu_count": count,
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": decimal("OnDemandPrice", vm["OnDemandPrice"]) / CENTS_PER_DOLLAR,
        "region": LOCATION,
        "available": True,  # listed among the VMs that can be created now
        "ram_gb": ram,
        "disk_gb": disk,
        "tier": "vm",
    }
