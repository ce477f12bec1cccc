"""Oracle Cloud: GPU shapes from Oracle's public price list (the cost estimator's product API).

Quirks (tests/fixtures/README.md for the recording):
- `GET https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD` answers
  every product of the list in one JSON document `{"lastUpdated", "items": [...]}` with no key
  (getcomputable/gpu-index `observatory/sources/oracle.py` reads the same). An item has a
  `partNumber`, `displayName`, `metricName`, `serviceCategory` and
  `currencyCodeLocalizations[].prices[]` with a `model` (`PAY_AS_YOU_GO`) and a `value`.
- GPU compute is priced per GPU-hour (`metricName` `GPU Per Hour`, `serviceCategory`
  `Compute - GPU`), all-in (the shape's CPUs and memory included). Display names are
  inconsistent ("Oracle Cloud Infrastructure - Compute - GPU - H100", "Compute - GPU - A100 -
  v2"), so parts are matched by part number: `scrapers/data/oci_shapes.csv` names, with sources,
  the shapes each part prices (B98415: BM.GPU.H100.8, 8 x H100 80GB SXM). A GPU-hour part of
  `Compute - GPU` missing from the table is a reject naming it; NVIDIA AI Enterprise licences
  (an add-on per GPU-hour, not a machine), Cloud@Customer, VMware and the `Compute - GPU - Other`
  category are not offers.
- No spot: the list has no preemptible prices (Oracle's preemptible capacity is a discount not
  published per part), so every offer is on-demand.
- The price is the same in every commercial region. Each shape is listed once per region of
  `scrapers/data/oci_regions.csv` (Oracle's regions offering GPU shapes), not once without a
  region: a buyer filtering by jurisdiction (`--jurisdiction eea`) then sees Oracle's Frankfurt
  and Amsterdam offers, where a region-less offer would have no country and be left out. The
  list does not say which shape a region stocks: these offers mean "published at this price,
  orderable in this region on request", like every `LISTED_ONLY` provider.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx

from scrapers.base import Credentials, data_rows, fetch_bytes
from scrapers.batch import id_field, offers_of_records
from scrapers.machines import Machine, machines_of
from scrapers.models import ParseResult, Pricing, json_object_with_list

NAME = "oci"
ENV_KEY: str | None = None
KEY_REQUIRED = False  # a public price list
URL = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD"
INTERVAL = timedelta(hours=24)
"""Oracle's list prices change a few times a year and its document is large: once a day."""
CURRENCY = "USD"
LISTED_ONLY = True  # a published price list: listed at a price, not rentable-now stock
IN_PRICE_INDEX = False  # kept out of index methodology v1
TIMEOUT = httpx.Timeout(60.0, connect=10.0)  # the whole list in one answer
GPU_METRIC = "GPU Per Hour"
GPU_CATEGORY = "Compute - GPU"
PAY_AS_YOU_GO = "PAY_AS_YOU_GO"
NOT_MACHINES = ("NVIDIA AI Enterprise",)  # licence add-ons billed per GPU-hour
SHAPES_FILE = "data/oci_shapes.csv"


def _by_part(rows: list[dict[str, str]]) -> dict[str, list[Machine]]:
    """The shapes each part number prices (one part may price several: A10 x1, x2, x4)."""
    machines = machines_of(rows, "shape")
    table: dict[str, list[Machine]] = {}
    for row in rows:
        table.setdefault(row["part_number"], []).append(machines[row["shape"]])
    return table


SHAPES = _by_part(data_rows("oci_shapes"))
REGIONS = {row["region"]: row for row in data_rows("oci_regions")}
"""Oracle's regions offering GPU shapes, with country and continent."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(client, "GET", URL, provider=NAME, timeout=TIMEOUT,
                       headers={"Accept": "application/json"})  # fmt: skip


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    items = json_object_with_list(payload, "items", NAME)["items"]
    return offers_of_records(NAME, observed_at, items, _offers_of, id_of=id_field("partNumber"))


def _is_gpu_machine(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("metricName") == GPU_METRIC
        and item.get("serviceCategory") == GPU_CATEGORY
        and not any(word in str(item.get("displayName", "")) for word in NOT_MACHINES)
    )


def _usd_pay_as_you_go(item: dict[str, Any]) -> float:
    for localization in item["currencyCodeLocalizations"]:
        if localization.get("currencyCode") != CURRENCY:
            continue
        for price in localization.get("prices") or ():
            if price.get("model") == PAY_AS_YOU_GO:
                value = price["value"]
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise TypeError(f"{PAY_AS_YOU_GO} value is not a number: {value!r}")
                return float(value)
    raise ValueError(f"no {CURRENCY} {PAY_AS_YOU_GO} price")


def _offers_of(item: Any) -> list[dict[str, Any]]:
    if not _is_gpu_machine(item):
        return []
    part = item["partNumber"]
    found = SHAPES.get(part)
    if not found:
        raise ValueError(
            f"GPU part {part} ({item.get('displayName')}) is not in scrapers/{SHAPES_FILE}"
        )
    price = _usd_pay_as_you_go(item)
    for shape in found:
        shape.check_whole_gpus()
    return [
        {
            **shape.offer_fields(),
            "offer_id": f"{shape.name}@{region}",
            "pricing": Pricing.ON_DEMAND,
            "price_per_gpu_hour": price,
            "currency": CURRENCY,
            "region": region,
            "available": True,  # listed at a price; stock is not published
            "tier": shape.name,
        }
        for shape in found
        for region in REGIONS
    ]
