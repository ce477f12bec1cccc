"""`OfferBatch`: the one way offers are built, checked and handed over (see scrapers/models.py).

Parsers add offers row by row or column by column; `finish` derives the price the provider did not
quote, checks every invariant on whole columns and keys, and turns each provider record that
breaks one into a `Reject` with its reason and the record as served.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from scrapers.models import (
    CENT_TOLERANCE_USD,
    CONVERTED_FIELDS,
    INT32_MAX,
    MAX_TEXT_CHARS,
    OFFER_SCHEMA,
    RELIABILITY_RANGE,
    VRAM_GB_RANGE,
    FormFactor,
    ParseResult,
    PriceQuotedPer,
    Pricing,
    Reject,
    json_raw,
    reason_of,
)

__all__ = [
    "RECORD_ERRORS",
    "OfferBatch",
    "arange",
    "decimal",
    "id_field",
    "number",
    "offers_of_records",
    "text_field",
    "whole",
]

_PARSER_FIELDS = frozenset(OFFER_SCHEMA.names) - {
    "provider", "observed_at", "price_quoted_per", "gpu", "country", "continent", "eea", "eu",
    *CONVERTED_FIELDS,
}  # fmt: skip
"""What a parser may set; the batch sets the rest, the pipeline resolves gpu, place and USD.
Prices are in `currency` (USD when the parser states none) until the pipeline converts them."""
DEFAULT_CURRENCY = "USD"

_RECORD = "_record"  # the position of the provider record a row came from
_STAGED = pa.schema(
    [
        *(pa.field(f.name, pa.int64()) if f.name == "gpu_count" else f for f in OFFER_SCHEMA),
        pa.field(_RECORD, pa.int64()),
    ]
)
"""Rows as gathered: `gpu_count` stays 64-bit until the invariants have been checked."""


SMALLEST_NORMAL = sys.float_info.min
"""Below this (and above zero) a float is subnormal: a figure no provider publishes (1e-320)."""
INT64_RANGE = (-(2**63), 2**63 - 1)
"""A whole number on the wire (GCP's `units`, an int64) within 64 bits."""
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A decimal as providers write one: ASCII digits, one point, an exponent. Python's `float` also
takes `1_000`, `inf`, `nan`, surrounding spaces and other scripts' digits: none of them is."""
_WHOLE = re.compile(r"[+-]?[0-9]+")


def _finite_normal(name: str, value: float, shown: object) -> float:
    if not math.isfinite(value) or (value != 0 and abs(value) < SMALLEST_NORMAL):
        raise ValueError(f"{name} {shown!r} is not a finite, normal number")
    return value


def number(name: str, value: object) -> float | None:
    """A JSON number as a float (None stays None); a bool or anything else is a TypeError, a
    number past a float's range a ValueError. Whether it is a sane figure (positive, finite,
    within the plausible band) is judged on whole columns later."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is not a number: {value!r}")
    try:
        converted = float(value)
    except OverflowError:
        raise ValueError(f"{name} {value!r} is past a float's range") from None
    return converted


def decimal(name: str, value: object) -> float:
    """A price as served, a JSON number or a decimal string (`"9.796"`, `"1.2e-3"`), as a finite
    normal float; `"1_000"`, `"inf"`, `" 1"` and anything else raise, naming `name`."""
    if isinstance(value, str):
        if _DECIMAL.fullmatch(value) is None:
            raise ValueError(f"{name} {value[:40]!r} is not a decimal number")
        return _finite_normal(name, float(value), value)
    converted = number(name, value)
    if converted is None:
        raise TypeError(f"{name} is not a number: None")
    return _finite_normal(name, converted, value)


def whole(name: str, value: object) -> int:
    """A whole number as served: a JSON integer or a string of digits (protobuf's JSON form of
    an int64), within 64 bits; a float (`1e30`, `2.0`) or a bool raises, naming `name`."""
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is not a whole number: {value!r}")
    if not INT64_RANGE[0] <= value <= INT64_RANGE[1]:
        raise ValueError(f"{name} {value} is past a 64-bit integer")
    return value


def text_field(record: Mapping[str, Any], key: str) -> str:
    """A JSON record's `key` as a non-empty string, stripped; a missing key is a KeyError, another
    value a ValueError naming it (both make the record a reject)."""
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is not a non-empty string: {value!r}")
    return value.strip()


def _count(name: str, value: object) -> int:
    """A parser's count as an int within 64 bits (1e30 GPUs from a huge VRAM figure raises)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is not a whole number: {value!r}")
    return whole(name, value)


def _text(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{name} is not a string: {value!r}")


def _flag(name: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"{name} is not true/false: {value!r}")


def _enum(kind: type[StrEnum]) -> Callable[[str, object], str | None]:
    def convert(name: str, value: object) -> str | None:
        if value is None:
            return None
        return kind(value).value  # type: ignore[arg-type]  # looks up any value, else ValueError

    return convert


_CONVERT: dict[str, Callable[[str, Any], Any]] = {
    **{f.name: number for f in OFFER_SCHEMA if f.type == pa.float64()},
    **{f.name: _text for f in OFFER_SCHEMA if f.type == pa.string()},
    **{f.name: _flag for f in OFFER_SCHEMA if f.type == pa.bool_()},
    "gpu_count": _count,
    "pricing": _enum(Pricing),
    "form_factor": _enum(FormFactor),
}


class OfferBatch:
    """The offers of one payload, gathered then checked and handed over as one table.

    `raw_of(i)` and `id_of(i)` give the provider's record number `i` as served and its id: a
    reject always carries the provider's own record, whatever broke.
    """

    def __init__(
        self,
        provider: str,
        observed_at: datetime,
        *,
        raw_of: Callable[[int], str],
        id_of: Callable[[int], object],
    ) -> None:
        if not provider:
            raise ValueError("provider must not be empty")
        if observed_at.tzinfo is None or observed_at.utcoffset() is None:
            raise ValueError("observed_at must be timezone-aware")
        self.provider = provider
        self.observed_at = observed_at.astimezone(UTC)
        self._raw_of, self._id_of = raw_of, id_of
        self._rows: dict[str, list[Any]] = {name: [] for name in _STAGED.names}
        self._chunks: list[pa.Table] = []
        self._rejects: list[tuple[int, str]] = []

    def add(self, record: int, offers: Iterable[Mapping[str, Any]]) -> None:
        """The offers of provider record `record`, each with `price_per_hour` (the provider
        quotes the instance) or `price_per_gpu_hour` (it quotes one GPU), never both. Raises
        (adding nothing) on a field of the wrong type, for the parser to `reject`."""
        rows = [self._converted(offer) for offer in offers]
        for row in rows:
            row[_RECORD] = record
            for name, values in self._rows.items():
                values.append(row.get(name))

    def _converted(self, offer: Mapping[str, Any]) -> dict[str, Any]:
        unknown = set(offer) - _PARSER_FIELDS
        if unknown:
            raise ValueError(f"not offer fields a parser sets: {sorted(unknown)}")
        row = {name: _CONVERT[name](name, value) for name, value in offer.items()}
        quoted = [name for name in ("price_per_hour", "price_per_gpu_hour") if name in offer]
        if len(quoted) != 1:
            raise ValueError("an offer states one of price_per_hour, price_per_gpu_hour")
        row["price_quoted_per"] = "instance" if quoted == ["price_per_hour"] else "gpu"
        return row

    def add_columns(
        self, records: pa.Array, quoted: PriceQuotedPer, columns: Mapping[str, pa.Array]
    ) -> None:
        """Offers as columns (typed as in `OFFER_SCHEMA`), one row per element of `records`."""
        n = len(records)
        staged = {name: columns.get(name, pa.nulls(n, _STAGED.field(name).type)) for name in
                  _STAGED.names}  # fmt: skip
        staged["price_quoted_per"] = pa.repeat(pa.scalar(quoted), n)
        staged[_RECORD] = records
        self._chunks.append(pa.table(staged, schema=_STAGED))

    def reject(self, record: int, reason: str) -> None:
        self._rejects.append((record, reason))

    def finish(self) -> ParseResult:
        """Derive prices, check the invariants and keys; one table plus the rejected records."""
        table = pa.concat_tables([pa.table(self._rows, schema=_STAGED), *self._chunks])
        table = _with_constants(_with_prices(_printable(table.combine_chunks())), self)
        problems = dict(self._rejects)
        kept, bad = _checked(table)
        problems.update({r: reason for r, reason in bad.items() if r not in problems})
        kept = _without_records(kept, problems)
        kept, dup = _deduplicated(kept)
        problems.update({r: reason for r, reason in dup.items() if r not in problems})
        kept = _without_records(kept, problems)
        rejects = [
            Reject(self.provider, _id_text(self._id_of(r)), reason, self._raw_of(r))
            for r, reason in sorted(problems.items())
        ]
        offers = kept.drop_columns([_RECORD]).cast(OFFER_SCHEMA)
        return ParseResult(offers, rejects)


RECORD_ERRORS: tuple[type[Exception], ...] = (
    KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
)  # fmt: skip
"""What a parser's reading of one malformed JSON record raises (a member missing or of the wrong
type, a list too short, a number too large for a float): the record is rejected."""


def id_field(name: str) -> Callable[[Any], object]:
    """A JSON record's id: its `name` member, None for a record that is not an object."""
    return lambda record: record.get(name) if isinstance(record, dict) else None


def offers_of_records(
    provider: str,
    observed_at: datetime,
    records: Sequence[Any],
    offers_of: Callable[[Any], Iterable[Mapping[str, Any]]],
    *,
    id_of: Callable[[Any], object],
    errors: tuple[type[Exception], ...] = RECORD_ERRORS,
) -> ParseResult:
    """The offers of a list of decoded JSON records, one record at a time: `offers_of(record)`
    gives its offers (none for a record that is no offer); a record for which it raises one of
    `RECORD_ERRORS` or `errors` is rejected with the reason, kept as served, with its id
    `id_of(record)` (None when that fails too)."""
    caught = tuple(dict.fromkeys((*RECORD_ERRORS, *errors)))

    def record_id(i: int) -> object:
        try:
            return id_of(records[i])
        except caught:
            return None

    batch = OfferBatch(
        provider, observed_at, raw_of=lambda i: json_raw(records[i]), id_of=record_id
    )
    for i, record in enumerate(records):
        try:
            batch.add(i, offers_of(record))
        except caught as exc:
            batch.reject(i, reason_of(exc))
    return batch.finish()


CONTROL_CHARACTERS = (
    r"[\x00-\x1f\x7f-\x9f\x{2028}\x{2029}\x{202a}-\x{202e}\x{2066}-\x{2069}\x{feff}]"
)
"""Never part of a name, stripped at parse (an RE2 class, as pyarrow matches it): NUL and the
other C0/C1 control characters (a NUL stored once was rendered on the page and written into
every export; `\\n`, `\\r` and NEL are among them), Unicode's line and paragraph separators
U+2028/U+2029 (YAML and JavaScript read them as line breaks: one in a region once ended a task
file's comment), the bidirectional embeddings, overrides and isolates that reorder text on
screen, and the byte-order mark."""


def _printable(table: pa.Table) -> pa.Table:
    """Every text column without control characters (the one place: all parsers pass here)."""
    for index, column in enumerate(table.schema):
        if column.type == pa.string() and column.name != _RECORD:
            cleaned = pc.replace_substring_regex(table[index], CONTROL_CHARACTERS, "")
            table = table.set_column(index, column.name, cleaned)
    return table


def _id_text(record_id: object) -> str | None:
    return None if record_id is None else str(record_id)


def _with_constants(table: pa.Table, batch: OfferBatch) -> pa.Table:
    n = table.num_rows
    currency = pc.fill_null(table["currency"], DEFAULT_CURRENCY)
    table = table.set_column(table.schema.get_field_index("currency"), "currency", currency)
    for name, value in (("provider", batch.provider), ("observed_at", batch.observed_at)):
        column = pa.repeat(pa.scalar(value, OFFER_SCHEMA.field(name).type), n)
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def _with_prices(table: pa.Table) -> pa.Table:
    """The price the provider did not quote, derived from the one it did (the only place)."""
    count = table["gpu_count"]
    count_ok = pc.fill_null(pc.and_(pc.greater(count, 0), pc.less_equal(count, INT32_MAX)), False)
    gpus = pc.cast(pc.if_else(count_ok, count, 1), pa.float64())
    per_instance = pc.equal(table["price_quoted_per"], "instance")
    per_gpu = pc.if_else(
        per_instance, pc.divide(table["price_per_hour"], gpus), table["price_per_gpu_hour"]
    )
    whole = pc.if_else(
        per_instance, table["price_per_hour"], pc.multiply(table["price_per_gpu_hour"], gpus)
    )
    table = table.set_column(table.schema.get_field_index("price_per_hour"), "price_per_hour",
                             whole)  # fmt: skip
    return table.set_column(
        table.schema.get_field_index("price_per_gpu_hour"), "price_per_gpu_hour", per_gpu
    )


def _between(values: pa.ChunkedArray, low: float, high: float) -> pa.ChunkedArray:
    return pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high))


def _positive(values: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.and_(pc.is_finite(values), pc.greater(values, 0))


_CHECKS: tuple[tuple[str, Callable[[pa.Table], Any], bool, str], ...] = (
    # (column shown, condition, null passes, what is wrong)
    ("offer_id", lambda t: pc.greater(pc.utf8_length(t["offer_id"]), 0), False, "is empty"),
    ("gpu_raw", lambda t: pc.greater(pc.utf8_length(t["gpu_raw"]), 0), False, "is empty"),
    *((name, lambda t, name=name: pc.less_equal(pc.utf8_length(t[name]), MAX_TEXT_CHARS), True,
       f"must be at most {MAX_TEXT_CHARS} characters")
      for name in ("offer_id", "gpu_raw", "region", "tier")),
    ("currency", lambda t: pc.match_substring_regex(t["currency"], "^[A-Z]{3}$"), False,
     "must be an ISO 4217 code such as USD or EUR"),
    ("pricing", lambda t: pc.is_valid(t["pricing"]), False, "is missing"),
    ("available", lambda t: pc.is_valid(t["available"]), False, "is missing"),
    ("gpu_count", lambda t: _between(t["gpu_count"], 1, INT32_MAX), False,
     f"must be a whole number of GPUs from 1 to {INT32_MAX}"),
    ("price_per_hour", lambda t: _positive(t["price_per_hour"]), False,
     "price must be positive and finite"),
    ("price_per_gpu_hour", lambda t: _positive(t["price_per_gpu_hour"]), False,
     "price must be positive and finite"),
    ("price_per_hour", lambda t: pc.less_equal(pc.abs(pc.subtract(
        pc.multiply(t["price_per_gpu_hour"], pc.cast(t["gpu_count"], pa.float64(), safe=False)),
        t["price_per_hour"])), CENT_TOLERANCE_USD), False,
     "does not match price_per_gpu_hour x gpu_count to the cent"),
    ("vram_gb", lambda t: _between(t["vram_gb"], *VRAM_GB_RANGE), True,
     "must be GB per GPU between 1 and 1024 (MiB read as GB?)"),
    ("vcpus", lambda t: pc.greater_equal(t["vcpus"], 0), True, "must not be negative"),
    ("ram_gb", lambda t: pc.greater_equal(t["ram_gb"], 0), True, "must not be negative"),
    ("setup_fee_native", lambda t: pc.greater_equal(t["setup_fee_native"], 0), True,
     "must not be negative"),
    ("price_per_month_native", lambda t: _positive(t["price_per_month_native"]), True,
     "must be positive and finite"),
    ("disk_gb", lambda t: pc.greater_equal(t["disk_gb"], 0), True, "must not be negative"),
    ("reliability", lambda t: _between(t["reliability"], *RELIABILITY_RANGE), True,
     "must be between 0 and 1"),
)  # fmt: skip
"""Every invariant of an offer, checked on whole columns."""


def _shown(value: Any) -> str:
    """A value as a reason quotes it: its repr, cut short (a name can be a megabyte)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def _checked(table: pa.Table) -> tuple[pa.Table, dict[int, str]]:
    """The rows meeting every invariant, and the first broken one's reason per bad record."""
    problems: dict[int, str] = {}
    valid = None
    for column, condition, null_passes, wrong in _CHECKS:
        ok = pc.fill_null(condition(table), null_passes)
        if not pc.all(ok).as_py():
            bad = pc.invert(ok)
            values = table[column].filter(bad).to_pylist()
            for record, value in zip(table[_RECORD].filter(bad).to_pylist(), values, strict=True):
                problems.setdefault(record, f"{column} {_shown(value)}: {wrong}")
        valid = ok if valid is None else pc.and_(valid, ok)
    return (table if valid is None else table.filter(valid)), problems


def _without_records(table: pa.Table, records: Mapping[int, str]) -> pa.Table:
    if not records or table.num_rows == 0:
        return table
    gone = pc.is_in(table[_RECORD], value_set=pa.array(list(records), pa.int64()))
    return table.filter(pc.invert(gone))


def _deduplicated(table: pa.Table) -> tuple[pa.Table, dict[int, str]]:
    """Records repeating an earlier row's (offer_id, pricing) key: the first one stays."""
    keys = ["offer_id", "pricing"]
    if table.select(keys).group_by(keys, use_threads=False).aggregate([]).num_rows == len(table):
        return table, {}
    indexed = table.select(keys).append_column("row", arange(table.num_rows))
    first = indexed.group_by(keys, use_threads=False).aggregate([("row", "min")])
    later = pc.invert(pc.is_in(indexed["row"], value_set=first["row_min"]))
    duplicates = table.filter(later)
    reasons = {
        record: f"duplicate offer_id {offer_id!r} ({pricing})"
        for record, offer_id, pricing in zip(
            duplicates[_RECORD].to_pylist(),
            duplicates["offer_id"].to_pylist(),
            duplicates["pricing"].to_pylist(),
            strict=True,
        )
    }
    return table, reasons


def arange(n: int) -> pa.Array:
    """0, 1, ..., n - 1 as int64, without a Python int per element."""
    if n == 0:
        return pa.array([], pa.int64())
    return pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
