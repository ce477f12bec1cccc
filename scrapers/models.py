"""The offer model every scraper produces, with its invariants enforced at construction."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Self

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CENT_TOLERANCE_USD",
    "FormFactor",
    "INT32_MAX",
    "MAX_TEXT_CHARS",
    "OFFER_COLUMNS",
    "Offer",
    "ParseResult",
    "PriceQuotedPer",
    "Pricing",
    "Reject",
    "instance_price_offers",
    "observed_at_utc",
]

MAX_TEXT_CHARS = 256
"""Longest id, GPU name, region or tier kept; a longer one is a broken record, not a name."""
CENT_TOLERANCE_USD = 0.005
"""`price_per_gpu_hour * gpu_count` must equal `price_per_hour` to the cent (±half a cent)."""


class Pricing(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"


class FormFactor(StrEnum):
    SXM = "SXM"
    PCIE = "PCIe"
    NVL = "NVL"


PriceQuotedPer = Literal["instance", "gpu"]
"""Which price the provider itself quoted; the other one is derived from it."""


class Offer(BaseModel):
    """One priced GPU offer as observed at `observed_at`.

    Build offers with `from_instance_price` or `from_gpu_price` so that a parser states which
    price the provider quoted; the other price is derived, never copied.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    offer_id: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="Stable provider key for this offer"
    )
    gpu: str | None = Field(default=None, description="Canonical GPU id, null when unknown")
    gpu_raw: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="The provider's own spelling"
    )
    form_factor: FormFactor | None = None
    gpu_count: int = Field(
        gt=0, le=2**31 - 1, description="A whole number (2.5 is refused); a 32-bit INTEGER"
    )
    vram_gb: float | None = Field(
        default=None, ge=1, le=1024, description="GB per GPU; outside 1..1024 means a unit mix-up"
    )
    pricing: Pricing
    price_per_hour: float = Field(description="USD per hour for the whole offer")
    price_per_gpu_hour: float = Field(description="USD per GPU-hour")
    price_quoted_per: PriceQuotedPer
    region: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    available: bool
    observed_at: datetime
    vcpus: float | None = Field(default=None, ge=0)
    ram_gb: float | None = Field(default=None, ge=0)
    disk_gb: float | None = Field(default=None, ge=0)
    verified: bool | None = None
    tier: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    reliability: float | None = Field(default=None, ge=0, le=1)
    country: str | None = Field(default=None, description="ISO 3166-1 alpha-2; null = unknown")
    continent: str | None = None
    eea: bool | None = Field(default=None, description="In the EEA; null when country unknown")
    eu: bool | None = Field(default=None, description="In the EU; null when country unknown")

    @field_validator("price_per_hour", "price_per_gpu_hour")
    @classmethod
    def _positive_finite(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"price must be positive and finite, got {value!r}")
        return value

    @field_validator("observed_at")
    @classmethod
    def _aware_utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("observed_at must be timezone-aware")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _prices_agree(self) -> Self:
        derived = self.price_per_gpu_hour * self.gpu_count
        if abs(derived - self.price_per_hour) > CENT_TOLERANCE_USD:
            raise ValueError(
                f"price_per_gpu_hour {self.price_per_gpu_hour} x gpu_count {self.gpu_count} "
                f"= {derived:.4f} does not match price_per_hour {self.price_per_hour}"
            )
        return self

    @classmethod
    def from_instance_price(cls, *, price_per_hour: float, gpu_count: int, **fields: Any) -> Offer:
        """An offer whose provider quotes the price of the whole instance."""
        per_gpu = price_per_hour / gpu_count if gpu_count else math.nan
        return cls(
            price_per_hour=price_per_hour,
            price_per_gpu_hour=per_gpu,
            gpu_count=gpu_count,
            price_quoted_per="instance",
            **fields,
        )

    @classmethod
    def from_gpu_price(cls, *, price_per_gpu_hour: float, gpu_count: int, **fields: Any) -> Offer:
        """An offer whose provider quotes the price of one GPU."""
        return cls(
            price_per_hour=price_per_gpu_hour * gpu_count,
            price_per_gpu_hour=price_per_gpu_hour,
            gpu_count=gpu_count,
            price_quoted_per="gpu",
            **fields,
        )


@dataclass(frozen=True, slots=True)
class Reject:
    """A provider record that could not become an offer, kept with the reason."""

    provider: str
    record_id: str | None
    reason: str
    raw: str


class ParseResult:
    """What a parser made of one payload: the good offers and the rejected records.

    A row parser appends `Offer`s to `offers`. A columnar parser hands its offers over as one
    Arrow table (`from_table`, built by `scrapers.columnar`, every `Offer` invariant already
    checked column-wise); the pipeline stores that table as it is, and `offers` builds (and
    validates) the `Offer` objects only when something asks for them.
    """

    __slots__ = ("_offers", "_table", "rejects")

    def __init__(
        self, offers: list[Offer] | None = None, rejects: list[Reject] | None = None
    ) -> None:
        self._offers: list[Offer] = [] if offers is None else offers
        self._table: pa.Table | None = None
        self.rejects: list[Reject] = [] if rejects is None else rejects

    @classmethod
    def from_table(cls, table: pa.Table, rejects: list[Reject] | None = None) -> ParseResult:
        """A result whose offers are the rows of `table` (columns: `OFFER_COLUMNS`)."""
        if table.schema.names != list(OFFER_COLUMNS.names):
            raise ValueError(f"offer table columns {table.schema.names} are not OFFER_COLUMNS")
        result = cls(rejects=rejects)
        result._table = table
        return result

    @property
    def offers(self) -> list[Offer]:
        """The offers as `Offer` objects (built from the table on first use)."""
        if self._table is not None:
            self._offers = [Offer(**row) for row in self._table.to_pylist()]
            self._table = None
        return self._offers

    @offers.setter
    def offers(self, offers: list[Offer]) -> None:
        self._offers, self._table = offers, None

    @property
    def table(self) -> pa.Table | None:
        """The offers as one Arrow table, while they have not been turned into objects."""
        return self._table

    @property
    def offer_count(self) -> int:
        return self._table.num_rows if self._table is not None else len(self._offers)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParseResult):
            return NotImplemented
        return (self.offers, self.rejects) == (other.offers, other.rejects)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParseResult(offers={self.offer_count} offers, rejects={self.rejects!r})"


OFFER_COLUMNS = pa.schema(
    [
        ("provider", pa.string()),
        ("offer_id", pa.string()),
        ("gpu", pa.string()),
        ("gpu_raw", pa.string()),
        ("form_factor", pa.string()),
        ("gpu_count", pa.int32()),
        ("vram_gb", pa.float64()),
        ("pricing", pa.string()),
        ("price_per_hour", pa.float64()),
        ("price_per_gpu_hour", pa.float64()),
        ("price_quoted_per", pa.string()),
        ("region", pa.string()),
        ("available", pa.bool_()),
        ("observed_at", pa.timestamp("us", tz="UTC")),
        ("vcpus", pa.float64()),
        ("ram_gb", pa.float64()),
        ("disk_gb", pa.float64()),
        ("verified", pa.bool_()),
        ("tier", pa.string()),
        ("reliability", pa.float64()),
        ("country", pa.string()),
        ("continent", pa.string()),
        ("eea", pa.bool_()),
        ("eu", pa.bool_()),
    ]
)
"""One Arrow column per `Offer` field, in field order (enums as their string values)."""


# Column-wise twin of `Offer.from_instance_price`, for parsers of bodies with thousands of
# offers: the rows as one Arrow table in OFFER_COLUMNS and, per row, whether it meets every
# invariant `Offer` enforces (the same comparisons on the same IEEE doubles). A parser sends each
# row that fails back through its row path, so the reject carries pydantic's reason and the raw.

INT32_MAX = 2**31 - 1
"""`Offer.gpu_count` is at most this: it is stored as a 32-bit INTEGER."""
_VRAM_GB = (1, 1024)  # `Offer.vram_gb` bounds
_RELIABILITY = (0, 1)  # `Offer.reliability` bounds


def observed_at_utc(observed_at: datetime) -> datetime | None:
    """`observed_at` in UTC, as `Offer` stores it; None when naive (every offer would fail)."""
    if observed_at.tzinfo is None or observed_at.utcoffset() is None:
        return None
    return observed_at.astimezone(UTC)


def _all(*conditions: pa.Array) -> pa.Array:
    mask = conditions[0]
    for condition in conditions[1:]:
        mask = pc.and_kleene(mask, condition)
    return pc.fill_null(mask, False)


def _null_or(values: pa.Array, condition: pa.Array) -> pa.Array:
    return pc.or_kleene(pc.is_null(values), condition)


def _text_ok(values: pa.Array) -> pa.Array:
    length = pc.utf8_length(values)
    return pc.and_(pc.greater(length, 0), pc.less_equal(length, MAX_TEXT_CHARS))


def _finite_positive(values: pa.Array) -> pa.Array:
    return pc.and_(pc.is_finite(values), pc.greater(values, 0))


def _null_or_at_least(values: pa.Array, low: float) -> pa.Array:
    return _null_or(values, pc.greater_equal(values, low))


def _null_or_between(values: pa.Array, bounds: tuple[float, float]) -> pa.Array:
    low, high = bounds
    return _null_or(
        values, pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high))
    )


def _constant(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, type_), n)


def instance_price_offers(
    *,
    provider: str,
    pricing: str,
    offer_id: pa.Array,
    gpu_raw: pa.Array,
    gpu_count: pa.Array,
    price_per_hour: pa.Array,
    observed_at: datetime,
    vram_gb: pa.Array,
    region: pa.Array,
    available: pa.Array,
    vcpus: pa.Array,
    ram_gb: pa.Array,
    disk_gb: pa.Array,
    verified: pa.Array,
    reliability: pa.Array,
) -> tuple[pa.Table, pa.Array]:
    """Offers quoted per instance, one row per array element, and the mask of valid rows.

    Arrays are the offers' fields (float64 prices and sizes, int64 `gpu_count`); `observed_at`
    must be aware. A row is valid when `Offer.from_instance_price` would accept it and store it:
    non-empty ids and names of at most MAX_TEXT_CHARS, `gpu_count` in 1..INT32_MAX, prices
    positive and finite, per-GPU price x count equal to the instance price to the cent, sizes in
    range.
    """
    if not provider:
        raise ValueError("provider must not be empty")
    utc = observed_at_utc(observed_at)
    if utc is None:
        raise ValueError("observed_at must be timezone-aware")
    n = len(offer_id)
    count_ok = pc.and_(pc.greater(gpu_count, 0), pc.less_equal(gpu_count, INT32_MAX))
    count = pc.cast(pc.if_else(count_ok, gpu_count, 1), pa.float64())  # bad rows: row path
    per_gpu = pc.divide(price_per_hour, count)
    # Offer._prices_agree: |per_gpu * count - price| <= half a cent, in the same float ops.
    agree = pc.less_equal(
        pc.abs(pc.subtract(pc.multiply(per_gpu, count), price_per_hour)), CENT_TOLERANCE_USD
    )
    valid = _all(
        _text_ok(offer_id),
        _text_ok(gpu_raw),
        _null_or(region, pc.less_equal(pc.utf8_length(region), MAX_TEXT_CHARS)),
        count_ok,
        _finite_positive(price_per_hour),
        _finite_positive(per_gpu),
        agree,
        _null_or_between(vram_gb, _VRAM_GB),
        _null_or_at_least(vcpus, 0),
        _null_or_at_least(ram_gb, 0),
        _null_or_at_least(disk_gb, 0),
        _null_or_between(reliability, _RELIABILITY),
    )
    gpu_count32 = pc.cast(pc.if_else(count_ok, gpu_count, 1), pa.int32())
    null_string = pa.nulls(n, pa.string())
    null_bool = pa.nulls(n, pa.bool_())
    columns = {
        "provider": _constant(provider, pa.string(), n),
        "offer_id": offer_id,
        "gpu": null_string,
        "gpu_raw": gpu_raw,
        "form_factor": null_string,
        "gpu_count": gpu_count32,
        "vram_gb": vram_gb,
        "pricing": _constant(pricing, pa.string(), n),
        "price_per_hour": price_per_hour,
        "price_per_gpu_hour": per_gpu,
        "price_quoted_per": _constant("instance", pa.string(), n),
        "region": region,
        "available": available,
        "observed_at": _constant(utc, OFFER_COLUMNS.field("observed_at").type, n),
        "vcpus": vcpus,
        "ram_gb": ram_gb,
        "disk_gb": disk_gb,
        "verified": verified,
        "tier": null_string,
        "reliability": reliability,
        "country": null_string,
        "continent": null_string,
        "eea": null_bool,
        "eu": null_bool,
    }
    return pa.table(columns, schema=OFFER_COLUMNS), valid
