"""The offer every scraper produces: one Arrow schema, one batch builder, one set of invariants.

An offer travels from parse to storage as a row of one Arrow table in `OFFER_SCHEMA` (declared
here, once). Parsers hand their offers to an `OfferBatch` (scrapers/batch.py), row by row or,
for bodies of thousands of offers, column by column; `OfferBatch.finish` derives the price the
provider did not quote, checks every invariant on whole columns, and moves each record that
breaks one into the rejects with its reason and the provider's own record. One validated
pydantic object per offer cannot meet the ingest target (bench/ingest.py), so the table is the
one representation.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

import orjson
import pyarrow as pa

from scrapers.errors import ProviderPayloadError

__all__ = [
    "CENT_TOLERANCE_USD",
    "CONVERTED_FIELDS",
    "OFFER_SCHEMA",
    "REJECT_SCHEMA",
    "FormFactor",
    "Offer",
    "ParseResult",
    "PriceQuotedPer",
    "Pricing",
    "Reject",
    "json_list_member",
    "json_object_member",
    "json_object_with_list",
    "json_raw",
    "reason_of",
    "seller_name",
]

MAX_TEXT_CHARS = 256
"""Longest id, GPU name, region or tier kept; a longer one is a broken record, not a name."""
CENT_TOLERANCE_USD = 0.005
"""`price_per_gpu_hour * gpu_count` must equal `price_per_hour` to the cent (±half a cent)."""
INT32_MAX = 2**31 - 1
"""`gpu_count` is stored as a 32-bit INTEGER."""
VRAM_GB_RANGE = (1.0, 1024.0)
"""GB per GPU; a figure outside means a unit mix-up (MiB read as GB)."""
RELIABILITY_RANGE = (0.0, 1.0)


class Pricing(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"


class FormFactor(StrEnum):
    SXM = "SXM"
    PCIE = "PCIe"
    NVL = "NVL"


PriceQuotedPer = Literal["instance", "gpu"]
"""Which price the provider itself quoted; the other one is derived from it."""

OFFER_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("offer_id", pa.string()),  # stable provider key
        ("gpu", pa.string()),  # canonical id, filled by the pipeline; null = unknown
        ("gpu_raw", pa.string()),  # the provider's own spelling
        ("form_factor", pa.string()),  # FormFactor value or null
        ("gpu_count", pa.int32()),
        ("vram_gb", pa.float64()),  # per GPU
        ("pricing", pa.string()),  # Pricing value
        ("price_per_hour", pa.float64()),  # USD, whole offer
        ("price_per_gpu_hour", pa.float64()),  # USD
        ("price_quoted_per", pa.string()),  # PriceQuotedPer
        ("region", pa.string()),
        ("available", pa.bool_()),
        ("observed_at", pa.timestamp("us", tz="UTC")),
        ("vcpus", pa.float64()),
        ("ram_gb", pa.float64()),
        ("disk_gb", pa.float64()),
        ("verified", pa.bool_()),
        ("tier", pa.string()),
        ("reliability", pa.float64()),
        ("country", pa.string()),  # ISO 3166-1 alpha-2, filled by the pipeline; null = unknown
        ("continent", pa.string()),
        ("eea", pa.bool_()),
        ("eu", pa.bool_()),
        # Currency (issue 23): the parser states the currency it read and quotes its prices in
        # it; the pipeline's one conversion step (pipeline/collection/currency.py) turns them into
        # USD with the ECB rate dated on or before the observation, keeping what was published.
        ("currency", pa.string()),  # ISO 4217 as published ("USD", "EUR")
        ("price_per_hour_native", pa.float64()),  # whole offer, in `currency`
        ("fx_rate", pa.float64()),  # USD per unit of `currency`; null for USD offers
        ("fx_date", pa.date32()),  # the ECB reference date of `fx_rate`
        ("setup_fee_native", pa.float64()),  # one-off fee, in `currency`; null = none stated
        ("setup_fee_usd", pa.float64()),
        ("price_per_month_native", pa.float64()),  # monthly cap, in `currency`
        ("price_per_month_usd", pa.float64()),
        ("published_usd_per_hour", pa.float64()),  # a non-USD offer's own USD figure: a check only
        # Aggregators (Shadeform, Prime Intellect): who sells the GPU behind the offer, as one of
        # our provider names where one exists ("lambda", "verda"), else lower-case as served;
        # null = sold by `provider` itself.
        ("seller", pa.string()),
    ]
)
"""The one declaration of an offer's fields. The warehouse stores these columns `BY NAME` and
checks them against its tables at run time (warehouse/queries.py), so nothing else declares them.
"""

CONVERTED_FIELDS = ("price_per_hour_native", "fx_rate", "fx_date", "setup_fee_usd",
                    "price_per_month_usd")  # fmt: skip
"""Set by the pipeline's currency conversion, never by a parser."""

REJECT_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("record_id", pa.string()),
        ("reason", pa.string()),
        ("raw", pa.string()),
        ("observed_at", pa.timestamp("us", tz="UTC")),
    ]
)

Offer = namedtuple("Offer", OFFER_SCHEMA.names)  # type: ignore[misc]  # namedtuple built from the schema names
"""One row of an offer table, read-only, for code that reads a few offers (tests, tools)."""


@dataclass(frozen=True, slots=True)
class Reject:
    """A provider record that could not become an offer, kept with the reason and as served."""

    provider: str
    record_id: str | None
    reason: str
    raw: str


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What a parser made of one payload: the offers (one table) and the rejected records."""

    table: pa.Table
    rejects: list[Reject] = field(default_factory=list)

    @property
    def offer_count(self) -> int:
        return int(self.table.num_rows)

    @property
    def offers(self) -> list[Offer]:
        """The offers as read-only rows (`offer.pricing`, `offer.price_per_gpu_hour`, ...)."""
        return [Offer(**row) for row in self.table.to_pylist()]

    def rejects_table(self, observed_at: datetime) -> pa.Table:
        return pa.table(
            {
                "provider": [r.provider for r in self.rejects],
                "record_id": [r.record_id for r in self.rejects],
                "reason": [r.reason for r in self.rejects],
                "raw": [r.raw for r in self.rejects],
                "observed_at": [observed_at] * len(self.rejects),
            },
            schema=REJECT_SCHEMA,
        )


def reason_of(exc: Exception) -> str:
    """A reject's reason from the exception a parser raised on one record."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc).replace("\n", "; ")


def seller_name(served: object, spellings: dict[str, str]) -> str:
    """An aggregator's name for the cloud behind an offer as ours: `spellings` maps the served
    names that differ from our provider names (`lambdalabs` → `lambda`); any other name is kept
    lower-case as served. A missing or empty name raises, for the parser to reject the record."""
    if not isinstance(served, str) or not served.strip():
        raise ValueError(f"the seller is not a non-empty string: {served!r}")
    name = served.strip().lower()
    return spellings.get(name, name)


def json_raw(record: Any) -> str:
    """A JSON record as a reject keeps it."""
    return orjson.dumps(record).decode()


def json_object_member(
    payload: bytes, key: str, provider: str, where: str = "body"
) -> dict[str, Any]:
    """The object under `key` in a JSON body; a `ProviderPayloadError` naming `where` (the body,
    a page) for any other body."""
    try:
        member = orjson.loads(payload)[key]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ProviderPayloadError(f"{provider}: {where} has no {key!r} object ({exc})") from exc
    if not isinstance(member, dict):
        raise ProviderPayloadError(f"{provider}: {where}: {key!r} is not an object")
    return member


def json_list_member(answer: Any, key: str, provider: str, where: str) -> list[Any]:
    """The list under `key` in one decoded answer (`where`: which, e.g. `/plans`) joined into a
    body; a `ProviderPayloadError` naming that answer and key when there is none."""
    found = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(found, list):
        raise ProviderPayloadError(f"{provider}: the {where} answer has no {key!r} list")
    return found


def json_object_with_list(
    payload: bytes, key: str, provider: str, where: str = "body"
) -> dict[str, Any]:
    """A JSON object whose `key` is a list (a page of records, with its next-page link); a
    `ProviderPayloadError` naming `where` (the body, a page) for any other body."""
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(
            f"{provider}: {where} is not JSON with a {key!r} list ({exc})"
        ) from exc
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        raise ProviderPayloadError(f"{provider}: {where} has no {key!r} list")
    return body
