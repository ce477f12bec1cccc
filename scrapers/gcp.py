"""Google Cloud: Compute Engine's SKUs from the Cloud Billing Catalog API, composed into GPU
machine types per region, on-demand and spot.

Quirks (Cloud Billing Catalog API reference, https://cloud.google.com/billing/docs/reference/
rest/v1/services.skus/list; tests/fixtures/README.md for the recordings):
- `GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus` (6F81-5844-456A is
  Compute Engine) needs an API key (`GCP_API_KEY`, sent as the `X-goog-api-key` header so it is
  never part of a logged URL). Pages follow `nextPageToken` (empty or absent on the last page);
  `pageSize` up to 5000. `fetch` merges every page into one `{"skus": [...]}` document, which
  `parse` reads, so one recorded page replays as a file too.
- A price is `unitPrice {units: "9", nanos: 796550569}` = 9.796550569 USD per `usageUnit` `h`
  (GPU and vCPU) or `GiBy.h` (memory, per GiB-hour); the first tiered rate (start 0) is the
  price. `serviceRegions` lists the regions one SKU prices ("running in Americas" covers
  us-central1, us-east1, us-west1 ...): one offer per region.
- `category.usageType` tells the pricing: `OnDemand` is on-demand, `Preemptible` is spot
  ("... attached to Spot Preemptible VMs ..."), `Commit1Yr`/`Commit3Yr` are committed-use
  discounts: not offers (a one- or three-year contract is not an hourly price). OnDemand rows that
  are not on-demand VMs are skipped too: `Reserved ...` reservation placeholders (priced 0),
  `... DWS Defined Duration ...` (Dynamic Workload Scheduler, a different provisioning model),
  `vGPU` slices and `Virtual Workstation` licences.
- A machine type is not a SKU: Google bills its parts. An A2, A3 or G2 VM costs its GPUs' SKU
  times their count plus its vCPUs times the family's `<family> Instance Core` SKU plus its
  memory (GiB) times the family's `<family> Instance Ram` SKU, each in the same region and
  pricing ("Spot Preemptible A3 Instance Core" for spot). `scrapers/data/gcp_machine_types.csv`
  says, with sources, which GPU SKU, count, vCPUs, memory and part family each machine type has
  (a2-ultragpu-8g: 8 x "A100 80GB", 96 vCPUs, 1360 GiB, A2 parts). A region whose answer lacks
  a part prices no offer for that machine type; a GPU SKU for which no machine type could be
  priced anywhere is a reject naming the missing part. GPUs attached to a VM of the buyer's choice
  (T4, V100, P100, P4 on N1) have rows without a machine type: the GPU alone is the offer, and
  the VM is billed apart (`tier` `gpu-only`).
- A published price list: `LISTED_ONLY` (listed at a price, not stock) and kept out of the price
  index v1 (`IN_PRICE_INDEX`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import RECORD_ERRORS, id_field, offers_of_records, whole
from scrapers.errors import MissingCredentialsError, ProviderPayloadError
from scrapers.models import FormFactor, ParseResult, Pricing, json_object_with_list

NAME = "gcp"
ENV_KEY = "GCP_API_KEY"
KEY_REQUIRED = True  # the Catalog API refuses anonymous calls
URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
INTERVAL = timedelta(hours=12)
"""Google changes list prices a few times a year; twice a day sees a change within hours and
reads the ~30,000 SKUs (a few pages) rarely."""
CURRENCY = "USD"
LISTED_ONLY = True  # a published price list: listed at a price, not rentable-now stock
IN_PRICE_INDEX = False  # kept out of index methodology v1
PAGE_SIZE = 5000  # the API's largest page
MAX_PAGES = 100  # a bound, not a limit met in practice: ~30,000 SKUs are 6 pages
NANOS_PER_UNIT = 1_000_000_000
MACHINE_TYPES_FILE = "data/gcp_machine_types.csv"
REGIONS_FILE = "data/gcp_regions.csv"
GPU_ONLY_TIER = "gpu-only"
PRICINGS = {"OnDemand": Pricing.ON_DEMAND, "Preemptible": Pricing.SPOT}
NOT_ON_DEMAND_VMS = ("Reserved ", "DWS ", "vGPU", "Virtual Workstation")
"""Description words of OnDemand SKUs that do not price an on-demand VM (module docstring)."""

_GPU = re.compile(
    r"^(?:Nvidia\s+)?(?:Tesla\s+)?(?P<gpu>\S.*?)\s+GPU"
    r"(?:\s+attached to Spot Preemptible VMs)?\s+running in\s+(?P<place>\S.*)$"
)
_PART = re.compile(
    r"^(?:Spot Preemptible\s+)?(?P<family>\S+)\s+Instance\s+(?P<kind>Core|Ram)\s+running in\s"
)
_PAGE = re.compile(r"^skus-(?P<token>[A-Za-z0-9_-]+)\.json$")


@dataclass(frozen=True, slots=True)
class MachineType:
    """One row of `gcp_machine_types.csv`; `name` empty for a GPU priced alone."""

    name: str
    gpu_sku: str
    gpu_count: int
    gpu_raw: str
    vram_gb: float
    form_factor: FormFactor | None
    vcpus: float | None
    ram_gib: float | None
    parts: str
    source: str


def _rows(file: str) -> list[dict[str, str]]:
    text = resources.files("scrapers").joinpath(file).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


@cache
def machine_types() -> dict[str, list[MachineType]]:
    """The machine types of each GPU SKU name (`A100 80GB`), from the data file."""
    table: dict[str, list[MachineType]] = {}
    for row in _rows(MACHINE_TYPES_FILE):
        table.setdefault(row["gpu_sku"], []).append(
            MachineType(
                name=row["machine_type"],
                gpu_sku=row["gpu_sku"],
                gpu_count=int(row["gpu_count"]),
                gpu_raw=row["gpu_raw"],
                vram_gb=float(row["vram_gb"]),
                form_factor=FormFactor(row["form_factor"]) if row["form_factor"] else None,
                vcpus=float(row["vcpus"]) if row["vcpus"] else None,
                ram_gib=float(row["ram_gib"]) if row["ram_gib"] else None,
                parts=row["parts"],
                source=row["source"],
            )
        )
    return table


@cache
def regions() -> dict[str, dict[str, str]]:
    """Google Cloud regions with their country and continent (`gcp_regions.csv`)."""
    return {row["region"]: row for row in _rows(REGIONS_FILE)}


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    if creds is None:
        raise MissingCredentialsError(f"{ENV_KEY} is not set: export it to collect {NAME}")
    skus: list[Any] = []
    token = ""
    for page in range(1, MAX_PAGES + 1):
        params = {"currencyCode": CURRENCY, "pageSize": str(PAGE_SIZE)}
        if token:
            params["pageToken"] = token
        body = fetch_bytes(
            client, "GET", str(httpx.URL(URL, params=params)), provider=NAME,
            headers={"Accept": "application/json", "X-goog-api-key": creds.api_key},
            auth_hint=f"check {ENV_KEY} (a key with the Cloud Billing API enabled)",
        )  # fmt: skip
        answer = json_object_with_list(body, "skus", NAME, f"page {page}")
        skus += answer["skus"]
        token = answer.get("nextPageToken") or ""
        if not token:
            return orjson.dumps({"skus": skus})
    raise ProviderPayloadError(f"{NAME}: still a nextPageToken after {MAX_PAGES} pages")


def replay_directory(directory: Path) -> Callable[[httpx.Request], httpx.Response]:
    """Answers from recorded pages: `skus-1.json` for the first request, `skus-<token>.json` for
    the request with `pageToken=<token>`; 404 for a page without a file."""
    pages = {m["token"]: p for p in directory.iterdir() if (m := _PAGE.match(p.name))}

    def answer(request: httpx.Request) -> httpx.Response:
        path = pages.get(request.url.params.get("pageToken") or "1")
        if path is None:
            return httpx.Response(404)
        return httpx.Response(200, content=path.read_bytes())

    return answer


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    skus = json_object_with_list(payload, "skus", NAME, "page 1")["skus"]
    parts = _parts(skus)
    return offers_of_records(
        NAME, observed_at, skus, lambda sku: _offers_of(sku, parts), id_of=id_field("skuId")
    )


def _category(sku: Any) -> dict[str, Any]:
    category = sku.get("category") if isinstance(sku, dict) else None
    return category if isinstance(category, dict) else {}


def _is_gpu(sku: Any) -> bool:
    return _category(sku).get("resourceGroup") == "GPU"


def _pricing(sku: dict[str, Any]) -> Pricing | None:
    """The offer's pricing, or None for a SKU that is no on-demand or spot VM price."""
    pricing = PRICINGS.get(sku["category"]["usageType"])  # Commit1Yr, Commit3Yr: None
    if pricing is None or any(word in sku["description"] for word in NOT_ON_DEMAND_VMS):
        return None
    return pricing


def _usd_per_unit(sku: dict[str, Any]) -> float:
    """The first tier's unit price, in USD per `usageUnit`."""
    rate = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]
    if rate.get("currencyCode", CURRENCY) != CURRENCY:
        raise ValueError(f"price in {rate['currencyCode']}, not {CURRENCY}")
    units = whole("unitPrice.units", rate.get("units", 0))  # an int64, as a string in JSON
    nanos = whole("unitPrice.nanos", rate.get("nanos", 0))
    if units < 0 or not 0 <= nanos < NANOS_PER_UNIT:
        raise ValueError(
            f"unitPrice {units} units {nanos} nanos: a price has units >= 0 and nanos from 0 to "
            f"{NANOS_PER_UNIT - 1:,}"
        )
    return units + nanos / NANOS_PER_UNIT


def _parts(skus: list[Any]) -> dict[tuple[str, str, Pricing, str], float]:
    """vCPU (`Core`, USD per vCPU-hour) and memory (`Ram`, USD per GiB-hour) prices by (family,
    kind, pricing, region)."""
    found: dict[tuple[str, str, Pricing, str], float] = {}
    for sku in skus:
        if not isinstance(sku, dict):
            continue
        match = _PART.match(str(sku.get("description", "")))
        pricing = PRICINGS.get(str(_category(sku).get("usageType", "")))
        if match is None or pricing is None:
            continue
        try:
            price = _usd_per_unit(sku)
        except RECORD_ERRORS:
            continue  # a part without a readable price leaves its machine types unpriced
        regions = sku.get("serviceRegions")
        for region in regions if isinstance(regions, list) else ():
            if isinstance(region, str):
                found[(match["family"], match["kind"], pricing, region)] = price
    return found


def _offers_of(sku: Any, parts: dict[tuple[str, str, Pricing, str], float]) -> list[dict[str, Any]]:
    """The offers of a GPU SKU; none for another SKU or a pricing that is no offer."""
    if not _is_gpu(sku):
        return []
    pricing = _pricing(sku)
    if pricing is None:
        return []
    description = sku["description"]
    match = _GPU.match(description)
    if match is None:
        raise ValueError(f"description {description!r} is not '<GPU> GPU ... running in <place>'")
    types = machine_types().get(match["gpu"])
    if not types:
        raise ValueError(f"GPU {match['gpu']!r} is not in scrapers/{MACHINE_TYPES_FILE}")
    gpu_price = _usd_per_unit(sku)
    offers: list[dict[str, Any]] = []
    missing: list[str] = []
    for region in sku["serviceRegions"]:
        for machine in types:
            common = {
                "gpu_raw": machine.gpu_raw,
                "form_factor": machine.form_factor,
                "gpu_count": machine.gpu_count,
                "vram_gb": machine.vram_gb,
                "pricing": pricing,
                "region": region,
                "available": True,  # listed at a price; stock is not published
                "currency": CURRENCY,
            }
            if not machine.name:
                slug = machine.gpu_raw.lower().replace(" ", "-")
                offers.append({"offer_id": f"{slug}@{region}", "price_per_gpu_hour": gpu_price,
                               "tier": GPU_ONLY_TIER, **common})  # fmt: skip
                continue
            core = parts.get((machine.parts, "Core", pricing, region))
            ram = parts.get((machine.parts, "Ram", pricing, region))
            if core is None or ram is None or machine.vcpus is None or machine.ram_gib is None:
                kind = "Core" if core is None else "Ram"
                missing.append(f"{machine.name}: no {pricing} '{machine.parts} Instance {kind}' "
                               f"price in {region}")  # fmt: skip
                continue
            price = gpu_price * machine.gpu_count + core * machine.vcpus + ram * machine.ram_gib
            machine_offer = {"offer_id": f"{machine.name}@{region}", "price_per_hour": price}
            offers.append({**machine_offer, "vcpus": machine.vcpus, "ram_gb": machine.ram_gib,
                           **common})  # fmt: skip
    if not offers and missing:
        raise ValueError(f"no machine type priced: {missing[0]}" + (
            f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))  # fmt: skip
    return offers
