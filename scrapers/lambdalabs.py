"""Lambda Cloud: the instance-type list (`GET /api/v1/instance-types`).

Quirks (see docs/pages/notes/provider-samples.md, "Lambda"):
- A key is required even for prices: `Authorization: Bearer <key>`; a missing or invalid key is
  401 `global/invalid-api-key`, an inactive account 403 `global/account-inactive` (Lambda OpenAPI
  v1.10.0, mirrored in api-evangelist/lambda-labs `openapi/lambda-labs-instances-api-openapi.yml`).
- `cloud.lambda.ai` is the production host; `cloud.lambdalabs.com` is a deprecated secondary
  (same spec), although gpuhunt and SkyPilot still call it.
- The top level is an object keyed by type name under `data`, not a list (same spec).
- `price_cents_per_hour` is integer US cents per hour for the *whole instance* (spec text): divided
  by `CENTS_PER_DOLLAR` here, per GPU by `specs.gpus`.
- GPU count, model, VRAM and form factor exist only in `description`, e.g.
  `8x H100 (80 GB SXM5)`, with a `Tesla ` prefix on legacy types (`8x Tesla V100 (16 GB)`);
  gpuhunt's `lambdalabs.py` parses the same string but only accepts a one-digit count. Ours takes
  any count and cross-checks it against `specs.gpus`.
- `regions_with_capacity_available` lists where a type launches *now*; an empty list means sold
  out while the type stays listed. One price per type, the same in every region (spec).
- CPU-only types (`cpu_4x_general`, `specs.gpus` 0) are skipped, as SkyPilot's
  `fetch_lambda_cloud.py` does; they are not GPU offers, so not rejects either.
- `memory_gib`/`storage_gib` are GiB (spec). No spot pricing exists (gpuhunt
  `src/integrity_tests/test_lambdalabs.py` asserts none).
- Errors are `{"error": {"code", "message", "suggestion"}}`: match on `code`, not `message`.
- "Generally limited to one request per second" (spec): one request per run, and the retry
  backoff (2 s and up, or `Retry-After`) stays above it.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, decimal
from scrapers.errors import MissingCredentialsError, ProviderHTTPError, ProviderPayloadError
from scrapers.models import FormFactor, ParseResult, Pricing, json_raw, reason_of

NAME = "lambda"
ENV_KEY = "LAMBDA_API_KEY"
KEY_REQUIRED = True  # the spec requires a key for every endpoint, prices included
URL = "https://cloud.lambda.ai/api/v1/instance-types"
INTERVAL = timedelta(minutes=15)  # capacity per region moves within the hour
CURRENCY = "USD"
CENTS_PER_DOLLAR = 100  # price_cents_per_hour is US cents (Lambda OpenAPI v1.10.0)
CPU_TYPE_PREFIX = "cpu_"  # `cpu_4x_general` (SkyPilot's fetch_lambda_cloud.py skips it)
ERROR_HINTS = {
    "global/invalid-api-key": f"check {ENV_KEY}",
    "global/account-inactive": "the Lambda account is inactive",
}

_DESCRIPTION = re.compile(
    r"^\s*(?P<count>\d+)x\s+(?:Tesla\s+)?"
    r"(?P<gpu>(?P<model>\S.*?)\s*\((?P<vram>\d+(?:\.\d+)?)\s*GB(?P<rest>[^)]*)\))\s*$"
)
_FORM_FACTORS = (
    (re.compile(r"SXM\d*", re.IGNORECASE), FormFactor.SXM),  # SXM4, SXM5, SXM6 (B200)
    (re.compile(r"PCIe", re.IGNORECASE), FormFactor.PCIE),
    (re.compile(r"NVL", re.IGNORECASE), FormFactor.NVL),
)


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    if creds is None:
        raise MissingCredentialsError(f"{ENV_KEY} is not set: export it to collect {NAME}")
    try:
        return fetch_bytes(
            client,
            "GET",
            URL,
            provider=NAME,
            headers={"Accept": "application/json", "Authorization": f"Bearer {creds.api_key}"},
            auth_hint=f"check {ENV_KEY} (Lambda needs a key even for prices)",
        )
    except ProviderHTTPError as exc:
        cause = exc.__cause__
        if not isinstance(cause, httpx.HTTPStatusError):
            raise
        try:
            code = _error_code(orjson.loads(cause.response.content))
        except orjson.JSONDecodeError:
            code = None
        if code is None:
            raise
        raise ProviderHTTPError(f"{exc} [error code {code}]") from cause


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    code = _error_code(body)
    if code is not None:
        hint = ERROR_HINTS.get(code, "see the Lambda API docs")
        raise ProviderPayloadError(f"{NAME}: API error {code!r}; {hint}")
    types = body.get("data") if isinstance(body, dict) else None
    if not isinstance(types, dict):
        raise ProviderPayloadError(f"{NAME}: body has no 'data' object of instance types")

    names, records = list(types), list(types.values())
    batch = OfferBatch(
        NAME, observed_at, raw_of=lambda i: json_raw(records[i]), id_of=names.__getitem__
    )
    for i, (type_name, record) in enumerate(types.items()):
        try:
            batch.add(i, _offers_of(type_name, record))
        except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


def _error_code(body: Any) -> str | None:
    """The `error.code` of a decoded Lambda error body, or None when the body is not one."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    return str(error.get("code") or "unknown")


def _form_factor(text: str) -> FormFactor | None:
    for token in text.split():
        for pattern, form_factor in _FORM_FACTORS:
            if pattern.fullmatch(token):
                return form_factor
    return None


def _is_cpu_only(type_name: str, instance_type: dict[str, Any]) -> bool:
    return type_name.startswith(CPU_TYPE_PREFIX) or instance_type["specs"].get("gpus") == 0


def _offers_of(type_name: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    instance_type = record["instance_type"]
    if _is_cpu_only(type_name, instance_type):
        return []
    specs = instance_type["specs"]
    description = instance_type["description"]
    match = _DESCRIPTION.match(description)
    if match is None:
        raise ValueError(f"description {description!r} is not '<count>x <gpu> (<vram> GB ...)'")
    gpu_count = specs["gpus"]  # the offer refuses a count that is not whole (2.5)
    if int(match["count"]) != gpu_count:
        raise ValueError(
            f"specs.gpus {gpu_count} disagrees with the count in description {description!r}"
        )
    common: dict[str, Any] = {
        "gpu_raw": match["gpu"],
        "form_factor": _form_factor(match["rest"]),
        "vram_gb": float(match["vram"]),
        "pricing": Pricing.ON_DEMAND,
        "price_per_hour": decimal("price_cents_per_hour", instance_type["price_cents_per_hour"])
        / CENTS_PER_DOLLAR,
        "gpu_count": gpu_count,
        "vcpus": specs.get("vcpus"),
        # GiB, stored as-is like Vast.ai's MiB / 1024 (no gpuhunt-style x1.074 to decimal GB).
        "ram_gb": specs.get("memory_gib"),
        "disk_gb": specs.get("storage_gib"),
    }
    regions = [region["name"] for region in record["regions_with_capacity_available"]]
    if not regions:
        return [{"offer_id": type_name, "region": None, "available": False, **common}]
    return [
        {"offer_id": f"{type_name}@{region}", "region": region, "available": True, **common}
        for region in regions
    ]
