"""RunPod: the GraphQL `gpuTypes` catalog swept per location, or the REST v2 GPU catalog.

Quirks (see docs/pages/notes/provider-samples.md, "RunPod"):
- GraphQL is deprecated ("retired in early 2027"); REST v2 (`GET /v2/catalog/gpus`) needs a Bearer
  key (runpod/docs `sdks/graphql/configurations.mdx`, `api-reference-v2/openapi.json`). Without a
  key we ask GraphQL anonymously, as gpuhunt does. `parse` takes every body `fetch` returns.
- Prices are USD/h for a *single* GPU: we publish 1-GPU offers (`gpuCount: 1`). `null`/`0` = not
  offered in that cloud (no offer, no reject). One list price per type and cloud, not per location.
- Spot fields are being removed (runpodctl PR #267, gpuhunt PR #249); REST v2 has none.
- Key on `id`, never `displayName` (it changes); skip the placeholder row `unknown`.
- Stock `High|Medium|Low` (REST: upper case) is in stock; `None`, `null` or absent is not.
- MIG slices (`NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb`, `... MIG 2g.48gb`,
  2026) are a fraction of one GPU that RunPod schedules in place of whole cards; a priced slice
  is a reject naming its profile, never a whole-GPU offer (public RunPod users report being given
  `MIG 1g.24gb` for a "24 GB" request; see tests/fixtures/README.md).

Location: secure cloud is addressed by datacenter id (`EU-RO-1`), community cloud by country code
(`CZ`); one `lowestPrice(input:)` answers one (gpuCount, location) pair (gpuhunt). So the GraphQL
`fetch` sweeps: the catalog query, then a stock query per *listed* datacenter and per non-null
country code, one after another (usual timeout and retries), returned as one body `{"base":
catalog, "secure": {dc: answer}, "community": {cc: answer}}`. Any failed request fails the run.
- One offer per (type, cloud, location) in stock there: `region` = the datacenter id or country
  code, `offer_id` = `<id>:<cloud>:<location>`. A location without stock gets no offer: the price
  is listed there, but nobody can deploy it.
- A type priced in a cloud but in stock nowhere keeps one `available=False` offer with
  `region=None` and `offer_id` `<id>:<cloud>`, like Lambda's sold-out types.
- REST v2 locates secure offers by each type's `dataCenters` (`id`, `availability`) [assumption:
  secure datacenters only]; it has no community locations, so those offers stay unlocated.
- A body without locations (a plain catalog answer, as older recordings; a REST record without
  `dataCenters`) gives one unlocated offer per cloud with the type-wide stock, as before;
  `lowestPrice.countryCode` (the cheapest machine of either cloud) is never a region.
- A replay answers every request with one body: a stock answer carrying the catalog's
  `dataCenters`/`countryCodes` (never asked for) is that echo, so `fetch` returns the catalog alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, number
from scrapers.errors import ProviderHTTPError, ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_raw, reason_of

logger = logging.getLogger(__name__)

NAME = "runpod"
ENV_KEY = "RUNPOD_API_KEY"
KEY_REQUIRED = False  # GraphQL answers anonymously; a key switches to the REST v2 catalog
URL = "https://api.runpod.io/graphql"
INTERVAL = timedelta(minutes=15)  # stock moves within the hour; a sweep is one query per location
CURRENCY = "USD"
REST_URL = "https://api.runpod.io/v2/catalog/gpus"
GPUS_PER_OFFER = 1
REST_PARAMS = {"include": "AVAILABILITY", "product": "POD", "count": str(GPUS_PER_OFFER)}
PLACEHOLDER_ID = "unknown"
IN_STOCK = frozenset({"high", "medium", "low"})
_MIG_PROFILE = re.compile(r"\bMIG\s+(\d+g\.\d+gb)\b", re.IGNORECASE)
"""`MIG 1g.24gb` in a type id: one compute slice of 1/7 to 4/7 of a GPU and its memory."""
QUERY = """
query GpuPrices($lowestPriceInput: GpuLowestPriceInput, $gpuTypesInput: GpuTypeFilter) {
  countryCodes
  dataCenters { id name listed }
  gpuTypes(input: $gpuTypesInput) {
    id displayName manufacturer memoryInGb
    secureCloud communityCloud
    securePrice communityPrice secureSpotPrice communitySpotPrice
    oneWeekPrice oneMonthPrice threeMonthPrice sixMonthPrice
    maxGpuCount maxGpuCountSecureCloud maxGpuCountCommunityCloud
    clusterPrice nodeGroupDatacenters { id }
    lowestPrice(input: $lowestPriceInput) {
      minimumBidPrice uninterruptablePrice minVcpu minMemory
      stockStatus countryCode availableGpuCounts maxUnreservedGpuCount
    }
  }
}
"""
GRAPHQL_BODY: dict[str, Any] = {
    "query": QUERY,
    "variables": {"lowestPriceInput": {"gpuCount": GPUS_PER_OFFER}},
}
STOCK_QUERY = """
query GpuStock($lowestPriceInput: GpuLowestPriceInput) {
  gpuTypes { id lowestPrice(input: $lowestPriceInput) { stockStatus } }
}
"""
CATALOG_ONLY_FIELDS = ("dataCenters", "countryCodes")

Cloud = Literal["secure", "community"]
CLOUDS: tuple[Cloud, ...] = ("secure", "community")
_Stock = dict[Cloud, dict[str, object] | None]
"""Per cloud: `stockStatus` by location, or None when the body says nothing of locations."""
_SweepStock = dict[Cloud, dict[str, dict[str, object]]]
"""Per cloud and location of a sweep: `stockStatus` by GPU id."""


@dataclass(frozen=True, slots=True)
class _GpuType:
    """One GPU type, whichever API described it."""

    id: str
    vram_gb: float | None
    on_demand: dict[Cloud, float | None]
    spot: dict[Cloud, float | None]
    stock: _Stock
    type_wide_stock: object  # what stands for every location when `stock` has none


# fetch


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    if creds is not None:
        return fetch_bytes(
            client,
            "GET",
            str(httpx.URL(REST_URL, params=REST_PARAMS)),
            provider=NAME,
            headers={"Accept": "application/json", "Authorization": f"Bearer {creds.api_key}"},
            auth_hint=f"check {ENV_KEY} or unset it (GraphQL works without a key)",
        )
    base = _post(client, GRAPHQL_BODY)
    catalog = _json_or_none(base)
    locations = _sweep_locations(catalog)
    if locations is None:
        return base  # an error answer, a REST body or a recorded sweep: `parse` judges it
    sweep: dict[str, Any] = {"base": catalog, "secure": {}, "community": {}}
    for cloud, location in locations:
        answer = _stock_answer(client, cloud, location)
        data = answer.get("data")
        if isinstance(data, dict) and any(name in data for name in CATALOG_ONLY_FIELDS):
            logger.info("%s: a stock query got the catalog answer back (a replay)", NAME)
            return base
        sweep[cloud][location] = answer
    return orjson.dumps(sweep)


def _post(client: httpx.Client, body: dict[str, Any]) -> bytes:
    return fetch_bytes(
        client,
        "POST",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        json=body,
        auth_hint=f"RunPod refused the anonymous query; set {ENV_KEY} to use REST v2",
    )


def _json_or_none(payload: bytes) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None


def _sweep_locations(catalog: Any) -> list[tuple[Cloud, str]] | None:
    """The (cloud, location) pairs to ask about; None when there is nothing to sweep: not a
    catalog answer, or one without locations (the plain `gpuTypes` answer of every public
    recording), which `parse` reads as unlocated offers with the type-wide stock."""
    data = catalog.get("data") if isinstance(catalog, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("gpuTypes"), list):
        return None
    centers, countries = data.get("dataCenters"), data.get("countryCodes")
    if not isinstance(centers, list) or not isinstance(countries, list):
        return None  # a plain `gpuTypes` answer: unlocated offers with the type-wide stock
    listed = [c.get("id") for c in centers if isinstance(c, dict) and c.get("listed") is True]
    locations: list[tuple[Cloud, str]] = [("secure", dc) for dc in _names(listed)]
    locations += [("community", cc) for cc in _names(countries)]
    return locations or None


def _names(values: list[Any]) -> list[str]:
    """The non-empty strings of `values`, each once, in order (`countryCodes` may hold null)."""
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def _stock_answer(client: httpx.Client, cloud: Cloud, location: str) -> dict[str, Any]:
    where = {"dataCenterId": location} if cloud == "secure" else {"countryCode": location}
    lowest = {"gpuCount": GPUS_PER_OFFER, "secureCloud": cloud == "secure", **where}
    try:
        payload = _post(client, {"query": STOCK_QUERY, "variables": {"lowestPriceInput": lowest}})
    except ProviderHTTPError as exc:
        raise ProviderHTTPError(f"{exc} (stock in {cloud} {location})") from exc
    answer = _json_or_none(payload)
    if not isinstance(answer, dict):
        raise ProviderPayloadError(f"{NAME}: the stock answer for {cloud} {location} is not JSON")
    return answer


# parse


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    records, to_gpu_type = _records(body)

    batch = OfferBatch(
        NAME,
        observed_at,
        raw_of=lambda i: json_raw(records[i]),
        id_of=lambda i: records[i].get("id") if isinstance(records[i], dict) else None,
    )
    for i, record in enumerate(records):
        try:
            if not isinstance(record, dict):
                raise TypeError(f"GPU record is not an object: {record!r}")
            gpu_type = to_gpu_type(record)
            if gpu_type.id != PLACEHOLDER_ID:
                batch.add(i, _whole_gpu_offers(gpu_type))
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _records(body: Any) -> tuple[list[Any], Callable[[dict[str, Any]], _GpuType]]:
    """The GPU records of a sweep, GraphQL or REST v2 body, and the function that reads one."""
    if isinstance(body, dict) and "base" in body:
        sweep = _sweep_stock(body)
        return _gpu_types_of(body["base"], "catalog"), partial(_from_graphql, sweep=sweep)
    if isinstance(body, dict) and ("data" in body or "errors" in body):
        return _gpu_types_of(body, "catalog"), _from_graphql
    if isinstance(body, dict) and isinstance(body.get("gpus"), list):
        return body["gpus"], _from_rest
    raise ProviderPayloadError(
        f"{NAME}: body has neither 'data.gpuTypes' (GraphQL), a 'base' answer (GraphQL sweep) "
        "nor a 'gpus' list (REST v2)"
    )


def _gpu_types_of(answer: Any, what: str) -> list[Any]:
    """`data.gpuTypes` of one GraphQL answer, or a payload error that names the answer."""
    errors = (answer.get("errors") if isinstance(answer, dict) else None) or []
    errors = errors if isinstance(errors, list) else [errors]
    data = answer.get("data") if isinstance(answer, dict) else None
    gpu_types = data.get("gpuTypes") if isinstance(data, dict) else None
    if not isinstance(gpu_types, list):
        messages = "; ".join(
            str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors
        )
        detail = f"GraphQL errors: {messages}" if messages else "no 'data.gpuTypes' list"
        raise ProviderPayloadError(f"{NAME}: {detail} (the {what} answer)")
    if errors:
        logger.warning("%s: the %s answer has data and %d errors", NAME, what, len(errors))
    return gpu_types


def _sweep_stock(sweep: dict[str, Any]) -> _SweepStock:
    """Per cloud and location: `stockStatus` by GPU id (entries without an id say nothing)."""
    stock: _SweepStock = {}
    for cloud in CLOUDS:
        answers = sweep.get(cloud)
        if not isinstance(answers, dict):
            raise ProviderPayloadError(f"{NAME}: the sweep has no '{cloud}' answers by location")
        stock[cloud] = {
            location: {
                record["id"]: _status(record)
                for record in _gpu_types_of(answer, f"{cloud} {location}")
                if isinstance(record, dict) and isinstance(record.get("id"), str)
            }
            for location, answer in answers.items()
        }
    return stock


def _status(record: dict[str, Any]) -> object:
    lowest = record.get("lowestPrice")
    return lowest.get("stockStatus") if isinstance(lowest, dict) else None


def _from_graphql(record: dict[str, Any], sweep: _SweepStock | None = None) -> _GpuType:
    gpu_id = _gpu_id(record)
    stock: _Stock = {cloud: None for cloud in CLOUDS}
    if sweep is not None:
        stock = {c: {at: by_id.get(gpu_id) for at, by_id in sweep[c].items()} for c in CLOUDS}
    _require_prices(record, [f"{cloud}Price" for cloud in CLOUDS])
    return _GpuType(
        id=gpu_id,
        vram_gb=number("memoryInGb", record["memoryInGb"]),
        # securePrice/communityPrice and secureSpotPrice/communitySpotPrice
        on_demand={cloud: _price(record, f"{cloud}Price") for cloud in CLOUDS},
        spot={cloud: _price(record, f"{cloud}SpotPrice") for cloud in CLOUDS},
        stock=stock,
        type_wide_stock=_status(record),
    )


def _require_prices(record: dict[str, Any], names: list[str], within: str = "") -> None:
    """A record names its prices, even as null: without any it is broken, not unpriced."""
    if not any(name in record for name in names):
        raise KeyError(" / ".join(within + name for name in names))


def _from_rest(record: dict[str, Any]) -> _GpuType:
    prices = record.get("price")
    if not isinstance(prices, dict):
        raise TypeError(f"price is not an object: {prices!r}")
    _require_prices(prices, list(CLOUDS), within="price.")
    centers = record.get("dataCenters")
    return _GpuType(
        id=_gpu_id(record),
        vram_gb=number("memory", record["memory"]),
        on_demand={cloud: _price(prices, cloud) for cloud in CLOUDS},
        spot={cloud: None for cloud in CLOUDS},  # REST v2 has no spot price
        # REST v2 has no community locations; an empty `dataCenters` list says nothing of
        # locations either, so the type-wide availability stands for them
        stock={
            "secure": None if centers in (None, []) else _center_stock(centers),
            "community": None,
        },
        type_wide_stock=record.get("availability"),
    )


def _center_stock(centers: object) -> dict[str, object]:
    if not isinstance(centers, list) or not all(
        isinstance(center, dict) and isinstance(center.get("id"), str) for center in centers
    ):
        raise TypeError(f"dataCenters is not a list of objects with an id: {centers!r}")
    return {center["id"]: center.get("availability") for center in centers}


def _gpu_id(record: dict[str, Any]) -> str:
    gpu_id = record["id"]
    if not isinstance(gpu_id, str) or not gpu_id.strip():
        raise ValueError(f"id must be a non-empty string, got {gpu_id!r}")
    return gpu_id


def _price(record: dict[str, Any], name: str) -> float | None:
    """A per-GPU USD price, or None when the cloud does not offer it (`null` or `0`)."""
    price = number(name, record.get(name))
    return None if price == 0 else price


def _in_stock(status: object) -> bool:
    return isinstance(status, str) and status.lower() in IN_STOCK


def _placements(gpu_type: _GpuType, cloud: Cloud) -> list[tuple[str | None, bool]]:
    """(region, available) of each offer: every location in stock, else one unlocated offer."""
    by_location = gpu_type.stock[cloud]
    if by_location is None:  # the body says nothing of locations
        return [(None, _in_stock(gpu_type.type_wide_stock))]
    stocked = [location for location, status in by_location.items() if _in_stock(status)]
    return [(location, True) for location in stocked] or [(None, False)]


def _whole_gpu_offers(gpu_type: _GpuType) -> list[dict[str, Any]]:
    """The type's offers; a priced MIG slice raises, for the parser to reject it."""
    offers = _offers_of(gpu_type)
    mig = _MIG_PROFILE.search(gpu_type.id)
    if offers and mig:
        raise ValueError(
            f"MIG slice {mig.group(1)} is a fraction of one GPU, not a whole GPU; "
            "fractional offers are not listed"
        )
    return offers


def _offers_of(gpu_type: _GpuType) -> list[dict[str, Any]]:
    offers: list[dict[str, Any]] = []
    for cloud in CLOUDS:
        prices = (
            (Pricing.ON_DEMAND, gpu_type.on_demand[cloud]),
            (Pricing.SPOT, gpu_type.spot[cloud]),
        )
        for region, available in _placements(gpu_type, cloud):
            common: dict[str, Any] = {
                "offer_id": f"{gpu_type.id}:{cloud}" + (f":{region}" if region else ""),
                "gpu_raw": gpu_type.id,
                "gpu_count": GPUS_PER_OFFER,
                "vram_gb": gpu_type.vram_gb,
                "region": region,
                "available": available,
                "tier": cloud,
            }
            offers.extend(
                {"price_per_gpu_hour": price, "pricing": pricing, **common}
                for pricing, price in prices
                if price is not None
            )
    return offers
