"""Azure: Linux pay-as-you-go and Spot prices of the GPU VM series from the Retail Prices API.

Quirks (see tests/fixtures/README.md, "azure"):
- `GET https://prices.azure.com/api/retail/prices?$filter=...` needs no key. The answer is
  `{"BillingCurrency", "Items": [...], "NextPageLink": url or null, "Count"}`; pages are read by
  following `NextPageLink` until it is null (`MAX_PAGES` bounds a looping link). A client that
  replays one recorded answer (`scrapers.base.is_replay`) stops after that page.
- The filter asks for Virtual Machines, `priceType eq 'Consumption'` and the N-series
  (`contains(armSkuName, 'Standard_N')`: NC, ND, NV and their versions). Reservations and
  savings plans are other price types: not asked for, and skipped if served (silently: they
  are prices of other products, not bad records).
- Each item is one meter: `armSkuName` (`Standard_ND96isr_H100_v5`), `armRegionName`
  (`westeurope`), `retailPrice` USD per `unitOfMeasure` `1 Hour` for the whole VM, `skuName` /
  `meterName` (`ND96isr H100 v5`, `... Spot`, `... Low Priority`) and `productName`
  (`Virtual Machines NDsr H100 v5 Series`, `... Series Windows`). Linux and Windows share the
  meter name; only `productName` tells them apart. Windows meters (license included), Low
  Priority meters (Batch) and `DevTestConsumption` rows are not offers: skipped silently. A
  `Spot` meter is a spot offer. A row whose `effectiveEndDate` has passed is history: skipped.
- GPU model, count and memory are not in the answer: `data/azure_vm_sizes.csv` holds them with
  sources. An N-series size missing from it is a reject naming the table; other sizes are not
  GPU offers. Fractional sizes (NVadsA10 v5 below NV36: 1/6 to 1/2 of an A10) are rejected until
  an offer can carry a fraction; FPGA sizes (NP) are rejected as not GPUs.
- `available=True` means listed at a price (`LISTED_ONLY`), as CoreWeave's rate card.
- A directory of recorded answers (`page-1.json`, `page-2.json`, ...) replays through
  `replay_directory`, the n-th request getting page n.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, data_rows, fetch_bytes, is_replay
from scrapers.batch import offers_of_records
from scrapers.errors import ProviderPayloadError
from scrapers.machines import machines_of
from scrapers.models import ParseResult, Pricing, json_object_with_list

NAME = "azure"
URL = "https://prices.azure.com/api/retail/prices"
FILTER = (
    "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
    "and contains(armSkuName, 'Standard_N')"
)
ENV_KEY: str | None = None
KEY_REQUIRED = False  # a public API
INTERVAL = timedelta(hours=1)
"""Hourly: Spot meters move within the day; pay-as-you-go prices rarely (one request series
serves both)."""
CURRENCY = "USD"
LISTED_ONLY = True
IN_PRICE_INDEX = False
MAX_PAGES = 200  # ~1,000 items a page: far above the N-series' few thousand meters
HOUR = "1 Hour"
REGIONS = {row["region"]: row for row in data_rows("azure_regions")}
MACHINES = machines_of(data_rows("azure_vm_sizes"), "vm_size")
GPU_SERIES = "Standard_N"
"""NC, ND, NV (and NP, FPGAs): a size of these series missing from the table is a reject."""
NOT_OFFERS = ("Low Priority",)
"""Meter names that are not a rentable VM's price (Batch low-priority)."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    url: str | None = str(httpx.URL(URL, params={"$filter": FILTER}))
    pages: list[Any] = []
    while url is not None:
        if len(pages) == MAX_PAGES:
            raise ProviderPayloadError(f"{NAME}: more than {MAX_PAGES} pages; NextPageLink loops?")
        body = _page(fetch_bytes(client, "GET", url, provider=NAME), f"page {len(pages) + 1}")
        pages.append(body["Items"])
        link = body.get("NextPageLink")
        url = link if isinstance(link, str) and link and not is_replay(client) else None
    return orjson.dumps({"Items": [item for items in pages for item in items],
                         "NextPageLink": None})  # fmt: skip


def _page(payload: bytes, where: str) -> dict[str, Any]:
    return json_object_with_list(payload, "Items", NAME, where)


def replay_directory(directory: Path) -> Callable[[httpx.Request], httpx.Response]:
    """The n-th request answered with `page-<n>.json`; 404 past the last page."""
    served = [0]

    def answer(request: httpx.Request) -> httpx.Response:
        served[0] += 1
        path = directory / f"page-{served[0]}.json"
        if not path.is_file():
            return httpx.Response(404)
        return httpx.Response(200, content=path.read_bytes())

    return answer


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    items = _page(payload, "page 1")["Items"]
    offers_of = partial(_offers_of, observed_at=observed_at)
    return offers_of_records(NAME, observed_at, items, offers_of, id_of=_id_of)


def _id_of(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    return f"{item.get('armSkuName')}@{item.get('armRegionName')}"


def _ended(item: dict[str, Any], observed_at: datetime) -> bool:
    end = item.get("effectiveEndDate")
    return isinstance(end, str) and datetime.fromisoformat(end) <= observed_at


def _pricing(item: dict[str, Any]) -> Pricing | None:
    """Spot, on-demand, or None for a row that is no rentable Linux VM's price."""
    if item.get("type") != "Consumption" or str(item["productName"]).endswith("Windows"):
        return None
    names = f"{item.get('skuName', '')} {item['meterName']}"
    if any(word in names for word in NOT_OFFERS):
        return None
    return Pricing.SPOT if "Spot" in names.split() else Pricing.ON_DEMAND


def _offers_of(item: dict[str, Any], observed_at: datetime) -> list[dict[str, Any]]:
    size = item["armSkuName"]
    machine = MACHINES.get(size)
    if machine is None:
        if isinstance(size, str) and size.startswith(GPU_SERIES):
            raise ValueError(
                f"VM size {size!r} is not in scrapers/data/azure_vm_sizes.csv; add it with its "
                "source"
            )
        return []  # not a GPU size
    pricing = _pricing(item)
    if pricing is None or _ended(item, observed_at):
        return []
    if item["unitOfMeasure"] != HOUR:
        raise ValueError(f"unitOfMeasure {item['unitOfMeasure']!r} is not {HOUR!r}")
    machine.check_whole_gpus()
    return [
        {
            **machine.offer_fields(),
            "offer_id": f"{size}@{item['armRegionName']}",
            "pricing": pricing,
            "price_per_hour": item["retailPrice"],  # Azure quotes the VM
            "currency": item.get("currencyCode") or CURRENCY,
            "region": item["armRegionName"],
            "available": True,  # listed at a price (LISTED_ONLY), not stock
        }
    ]
