"""RunPod: the GraphQL `gpuTypes` catalog, or the REST v2 GPU catalog when a key is set.

Quirks (see shared/provider-samples/README.md, "RunPod"):
- GraphQL (`POST /graphql`) is deprecated and "will be retired in early 2027"; REST v2
  (`GET /v2/catalog/gpus`) replaces it but needs a Bearer key (runpod/docs
  `sdks/graphql/configurations.mdx`, `api-reference-v2/openapi.json`). Without a key we query
  GraphQL anonymously, as gpuhunt and RunPod's own `helpers/gpu_types.py` do. `parse` accepts both
  bodies, so a saved body of either kind replays.
- Prices are USD per hour for a *single* GPU (REST v2 says so; gpuhunt and SkyPilot multiply by the
  GPU count). We publish one 1-GPU offer per cloud: pods come in 1..maxGpuCount GPUs at the same
  per-GPU price, and `lowestPrice` is asked for `gpuCount: 1`.
- `securePrice`/`communityPrice` (REST: `price.secure`/`price.community`) are `null` or `0` when
  the type is not offered in that cloud (gpuhunt tests truthiness): no offer, not a reject.
- `secureSpotPrice`/`communitySpotPrice` are interruptible per-GPU prices; RunPod is removing spot
  (runpodctl PR #267; gpuhunt PR #249) and REST v2 has no spot at all, so absent/null is normal.
- Key on `id` (`NVIDIA H100 80GB HBM3`), never `displayName`, which changes over time
  (runpod-python `docs/api/queries.md`). The API lists a placeholder row with id `unknown`
  (RunPod's `helpers/gpu_types.py` filters it out); we skip it.
- Availability: GraphQL `lowestPrice.stockStatus` is `High`/`Medium`/`Low`/`None` or `null`
  (`null` = not deployable; gpuhunt drops those rows). Without a cloud filter it describes the
  cheapest 1-GPU machine across both clouds, so both clouds' offers carry it. REST v2 reports
  `availability` `NONE|LOW|MEDIUM|HIGH` only with `include=AVAILABILITY`, for secure cloud unless
  `cloud` is given (openapi.json `GpuCloudFilter`); it too applies to both offers.
- Region is left empty: `lowestPrice.countryCode` is where that cheapest machine sits (often a
  community country for a type also sold in secure data centers), not a location of either offer,
  and REST v2 has none per GPU type.
- `lowestPrice.minVcpu`/`minMemory` change every few minutes (SkyPilot `fetch_runpod.py`) and REST
  v2 lacks them: not published.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.errors import ProviderPayloadError
from scrapers.models import Offer, ParseResult, Pricing, Reject

logger = logging.getLogger(__name__)

NAME = "runpod"
ENV_KEY = "RUNPOD_API_KEY"
KEY_REQUIRED = False  # GraphQL answers anonymously; a key switches to the REST v2 catalog
URL = "https://api.runpod.io/graphql"
REST_URL = "https://api.runpod.io/v2/catalog/gpus"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
GPUS_PER_OFFER = 1
REST_PARAMS = {"include": "AVAILABILITY", "product": "POD", "count": str(GPUS_PER_OFFER)}
PLACEHOLDER_ID = "unknown"
IN_STOCK = frozenset({"high", "medium", "low"})
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

Cloud = Literal["secure", "community"]
CLOUDS: tuple[Cloud, ...] = ("secure", "community")


@dataclass(frozen=True, slots=True)
class _GpuType:
    """One GPU type, whichever API described it."""

    id: str
    vram_gb: float | None
    on_demand: dict[Cloud, float | None]
    spot: dict[Cloud, float | None]
    available: bool


_Reader = Callable[[dict[str, Any]], _GpuType]


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    headers = {"Accept": "application/json"}
    if creds is None:
        return fetch_bytes(
            client,
            "POST",
            URL,
            provider=NAME,
            timeout=TIMEOUT,
            headers=headers,
            json=GRAPHQL_BODY,
            auth_hint=f"RunPod refused the anonymous query; set {ENV_KEY} to use REST v2",
        )
    headers["Authorization"] = f"Bearer {creds.api_key}"
    return fetch_bytes(
        client,
        "GET",
        str(httpx.URL(REST_URL, params=REST_PARAMS)),
        provider=NAME,
        timeout=TIMEOUT,
        headers=headers,
        auth_hint=f"check {ENV_KEY} or unset it (GraphQL works without a key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    records, to_gpu_type = _records(body)

    result = ParseResult()
    for record in records:
        try:
            if not isinstance(record, dict):
                raise TypeError(f"GPU record is not an object: {record!r}")
            gpu_type = to_gpu_type(record)
            if gpu_type.id != PLACEHOLDER_ID:
                result.offers.extend(_offers_of(gpu_type, observed_at))
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            record_id = record.get("id") if isinstance(record, dict) else None
            result.rejects.append(
                Reject(
                    provider=NAME,
                    record_id=None if record_id is None else str(record_id),
                    reason=_reason(exc),
                    raw=orjson.dumps(record).decode(),
                )
            )
    return result


def _records(body: Any) -> tuple[list[Any], _Reader]:
    """The GPU records of a GraphQL or REST v2 body, and the function that reads one."""
    if isinstance(body, dict) and ("data" in body or "errors" in body):
        errors = body.get("errors") or []
        errors = errors if isinstance(errors, list) else [errors]
        data = body.get("data")
        gpu_types = data.get("gpuTypes") if isinstance(data, dict) else None
        if not isinstance(gpu_types, list):
            messages = "; ".join(
                str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors
            )
            detail = f"GraphQL errors: {messages}" if messages else "no 'data.gpuTypes' list"
            raise ProviderPayloadError(f"{NAME}: {detail}")
        if errors:
            logger.warning("%s: GraphQL answered with data and %d errors", NAME, len(errors))
        return gpu_types, _from_graphql
    if isinstance(body, dict) and isinstance(body.get("gpus"), list):
        return body["gpus"], _from_rest
    raise ProviderPayloadError(
        f"{NAME}: body has neither 'data.gpuTypes' (GraphQL) nor a 'gpus' list (REST v2)"
    )


def _from_graphql(record: dict[str, Any]) -> _GpuType:
    lowest = record.get("lowestPrice")
    return _GpuType(
        id=_gpu_id(record),
        vram_gb=_number(record["memoryInGb"], "memoryInGb"),
        on_demand={
            "secure": _price(record, "securePrice"),
            "community": _price(record, "communityPrice"),
        },
        spot={
            "secure": _price(record, "secureSpotPrice"),
            "community": _price(record, "communitySpotPrice"),
        },
        available=_in_stock(lowest.get("stockStatus") if isinstance(lowest, dict) else None),
    )


def _from_rest(record: dict[str, Any]) -> _GpuType:
    prices = record.get("price") or {}
    if not isinstance(prices, dict):
        raise TypeError(f"price is not an object: {prices!r}")
    return _GpuType(
        id=_gpu_id(record),
        vram_gb=_number(record["memory"], "memory"),
        on_demand={cloud: _price(prices, cloud) for cloud in CLOUDS},
        spot={cloud: None for cloud in CLOUDS},  # REST v2 has no spot price
        available=_in_stock(record.get("availability")),
    )


def _gpu_id(record: dict[str, Any]) -> str:
    gpu_id = record["id"]
    if not isinstance(gpu_id, str) or not gpu_id.strip():
        raise ValueError(f"id must be a non-empty string, got {gpu_id!r}")
    return gpu_id


def _number(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is not a number: {value!r}")
    return float(value)


def _price(record: dict[str, Any], name: str) -> float | None:
    """A per-GPU USD price, or None when the cloud does not offer it (`null` or `0`)."""
    price = _number(record.get(name), name)
    return None if price == 0 else price


def _in_stock(status: object) -> bool:
    return isinstance(status, str) and status.lower() in IN_STOCK


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc).replace("\n", "; ")


def _offers_of(gpu_type: _GpuType, observed_at: datetime) -> list[Offer]:
    offers = []
    for cloud in CLOUDS:
        common: dict[str, Any] = {
            "provider": NAME,
            "offer_id": f"{gpu_type.id}:{cloud}",
            "gpu_raw": gpu_type.id,
            "gpu_count": GPUS_PER_OFFER,
            "vram_gb": gpu_type.vram_gb,
            "region": None,
            "available": gpu_type.available,
            "observed_at": observed_at,
            "tier": cloud,
        }
        for pricing, price in (
            (Pricing.ON_DEMAND, gpu_type.on_demand[cloud]),
            (Pricing.SPOT, gpu_type.spot[cloud]),
        ):
            if price is not None:
                offers.append(
                    Offer.from_gpu_price(price_per_gpu_hour=price, pricing=pricing, **common)
                )
    return offers
