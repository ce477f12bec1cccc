"""Vast.ai: the public offer search (`POST /api/v0/bundles/`).

Quirks (see shared/provider-samples/README.md, "Vast.ai"):
- `dph_base` is USD per hour for the compute of the *whole offer* (all `num_gpus`); `dph_total`
  adds storage for `allocated_storage` GB. We publish `dph_base`: disk is billed separately at
  `storage_cost` USD per GB-month and depends on the disk size you pick (gpuhunt does the same).
- `min_bid` is the floor of an interruptible bid for the whole offer (vast-cli help; gpuhunt and
  SkyPilot use it as the spot price); `null` means no interruptible price.
- `gpu_ram` is MiB per GPU and irregular (24564 for a 24 GB card): divided by 1024 here, snapped
  to the catalog size later.
- `rented` is not filtered by the backend (vast-cli PR #394): a rented offer is listed,
  not available.
- No pagination: without `limit` only 64 offers come back (gpuhunt issue #142).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from scrapers.base import Credentials, fetch_bytes
from scrapers.errors import ProviderPayloadError
from scrapers.models import (
    OFFER_COLUMNS,
    Offer,
    ParseResult,
    Pricing,
    Reject,
    instance_price_offers,
    observed_at_utc,
)

NAME = "vastai"
ENV_KEY = "VASTAI_API_KEY"
KEY_REQUIRED = False  # gpuhunt searches without a key; a key only changes the rate-limit identity
URL = "https://console.vast.ai/api/v0/bundles/"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
MIB_PER_GIB = 1024
SEARCH_LIMIT = 10_000
SEARCH_BODY: dict[str, Any] = {
    "rentable": {"eq": True},
    "rented": {"eq": False},
    "type": "on-demand",
    "order": [["score", "desc"]],
    "limit": SEARCH_LIMIT,
}


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    headers = {"Accept": "application/json"}
    if creds is not None:
        headers["Authorization"] = f"Bearer {creds.api_key}"
    return fetch_bytes(
        client,
        "POST",
        URL,
        provider=NAME,
        timeout=TIMEOUT,
        headers=headers,
        json=SEARCH_BODY,
        auth_hint=f"check {ENV_KEY} or unset it (the search works without a key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    """The offers of a search body, column-wise; records the columns cannot take go row by row.

    The column path decodes only the fields read here, with strict types (msgspec), and checks
    every `Offer` invariant on whole columns. A record of another shape (a string price, a
    missing field, a value out of range) goes through `_offers_of`, the row path, which gives
    the same offers or the reject with its reason; a body the column decoder cannot read at all
    goes through the row path whole, which raises what it always raised.
    """
    if observed_at_utc(observed_at) is not None:
        try:
            return _parse_columns(payload, observed_at)
        except _RowPath:
            pass
    return _parse_rows(payload, observed_at)


def _parse_rows(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    records = body.get("offers") if isinstance(body, dict) else None
    if not isinstance(records, list):
        raise ProviderPayloadError(f"{NAME}: body has no 'offers' list")

    result = ParseResult()
    for record in records:
        offers, reject = _row(record, observed_at)
        result.offers.extend(offers)
        if reject is not None:
            result.rejects.append(reject)
    return result


def _row(record: Any, observed_at: datetime) -> tuple[list[Offer], Reject | None]:
    try:
        return _offers_of(record, observed_at), None
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        record_id = record.get("id") if isinstance(record, dict) else None
        return [], Reject(
            provider=NAME,
            record_id=None if record_id is None else str(record_id),
            reason=_reason(exc),
            raw=orjson.dumps(record).decode(),
        )


class _RowPath(Exception):
    """The column path cannot take this body: parse it row by row."""


class _Record(msgspec.Struct, gc=False):
    """The fields `_offers_of` reads, with the JSON types the column path takes as they are."""

    id: int
    num_gpus: int
    gpu_name: str
    gpu_ram: float
    dph_base: float
    min_bid: float | None = None
    geolocation: str | None = None
    rentable: bool = True
    rented: bool = False
    cpu_cores: float | None = None
    cpu_cores_effective: float | None = None
    cpu_ram: float | None = None
    disk_space: float | None = None
    verification: str | None = None
    reliability2: float | None | msgspec.UnsetType = msgspec.UNSET
    reliability: float | None = None


class _Body(msgspec.Struct, gc=False):
    offers: list[_Record]


class _RawBody(msgspec.Struct, gc=False):
    offers: list[msgspec.Raw]


_BODY = msgspec.json.Decoder(_Body)
_RAW_BODY = msgspec.json.Decoder(_RawBody)
_RECORD = msgspec.json.Decoder(_Record)


def _parse_columns(payload: bytes, observed_at: datetime) -> ParseResult:
    raws: list[msgspec.Raw] | None = None
    slow: list[int] = []  # indices of the records for the row path
    try:
        typed = _BODY.decode(payload).offers
        index: list[int] | None = None
    except msgspec.ValidationError:
        raws = _raw_records(payload)
        typed, index, slow = _decode_one_by_one(raws)
    except msgspec.DecodeError:
        raise _RowPath from None
    table, keys, failed = _columns(typed, index, observed_at)
    slow.extend(failed)
    if not slow:
        return ParseResult.from_table(table)
    raws = raws if raws is not None else _raw_records(payload)
    rejects: list[Reject] = []
    slow_offers: list[Offer] = []
    slow_keys: list[int] = []
    for i in sorted(slow):
        offers, reject = _row(_plain(raws[i]), observed_at)
        if reject is not None:
            rejects.append(reject)
        slow_offers.extend(offers)
        slow_keys.extend(2 * i + n for n in range(len(offers)))
    if slow_offers:
        table = pa.concat_tables([table, _table_of(slow_offers)])
        keys = pa.concat_arrays([keys, pa.array(slow_keys, pa.int64())])
        table = table.take(pc.sort_indices(keys))
    return ParseResult.from_table(table, rejects)


def _raw_records(payload: bytes) -> list[msgspec.Raw]:
    try:
        return _RAW_BODY.decode(payload).offers
    except msgspec.MsgspecError:
        raise _RowPath from None


def _plain(raw: msgspec.Raw) -> Any:
    """One record as the row path reads it (orjson), or the whole body goes the row path."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _RowPath from None  # e.g. a number out of range: the body is not JSON to orjson


def _decode_one_by_one(raws: list[msgspec.Raw]) -> tuple[list[_Record], list[int], list[int]]:
    """Some record does not fit `_Record`: decode each on its own; the misfits go row by row."""
    typed: list[_Record] = []
    index: list[int] = []
    slow: list[int] = []
    for i, raw in enumerate(raws):
        try:
            typed.append(_RECORD.decode(raw))
            index.append(i)
        except msgspec.ValidationError:
            slow.append(i)
    return typed, index, slow


def _columns(
    typed: list[_Record], index: list[int] | None, observed_at: datetime
) -> tuple[pa.Table, pa.Array, list[int]]:
    """The offers of well-typed records, each row's sort key, and the records that failed."""
    n = len(typed)
    if n == 0:
        return OFFER_COLUMNS.empty_table(), pa.array([], pa.int64()), []
    (ids, num_gpus, gpu_name, gpu_ram, dph_base, min_bid, geolocation, rentable, rented,
     cpu_cores, cpu_cores_effective, cpu_ram, disk_space, verification, reliability2,
     reliability) = zip(*map(msgspec.structs.astuple, typed), strict=True)  # fmt: skip
    try:
        record_id = pa.array(ids, pa.int64())
        gpu_count = pa.array(num_gpus, pa.int64())
    except (OverflowError, pa.ArrowException):
        raise _RowPath from None  # an integer past 64 bits: the row path reads it as a float
    f64 = pa.float64()
    cores = pa.array(cpu_cores, f64)
    effective = pa.array(cpu_cores_effective, f64)
    machine_ram = pa.array(cpu_ram, f64)
    # ram_gb: the offer's share of the machine's MiB, only when all three are known (as the
    # row path: `cpu_ram * (cores_effective / cpu_cores) / MIB_PER_GIB`, the same float ops).
    has_ram = pc.fill_null(
        pc.and_(pc.and_(pc.not_equal(cores, 0), pc.is_valid(effective)), pc.is_valid(machine_ram)),
        False,
    )
    share = pc.divide(pc.multiply(machine_ram, pc.divide(effective, cores)), float(MIB_PER_GIB))
    ram_gb = pc.if_else(has_ram, share, pa.scalar(None, f64))
    available = pc.and_(pa.array(rentable, pa.bool_()), pc.invert(pa.array(rented, pa.bool_())))
    verified = pc.fill_null(pc.equal(pa.array(verification, pa.string()), "verified"), False)
    unset = msgspec.UNSET
    reliability_ = pa.array(
        [r1 if r2 is unset else r2 for r2, r1 in zip(reliability2, reliability, strict=True)], f64
    )
    fields = {
        "offer_id": pc.cast(record_id, pa.string()),
        "gpu_raw": pa.array(gpu_name, pa.string()),
        "gpu_count": gpu_count,
        "vram_gb": pc.divide(pa.array(gpu_ram, f64), float(MIB_PER_GIB)),
        "region": pa.array(geolocation, pa.string()),
        "available": available,
        "vcpus": effective,
        "ram_gb": ram_gb,
        "disk_gb": pa.array(disk_space, f64),
        "verified": verified,
        "reliability": reliability_,
    }
    on_demand, od_ok = instance_price_offers(
        provider=NAME,
        pricing=Pricing.ON_DEMAND.value,
        price_per_hour=pa.array(dph_base, f64),
        observed_at=observed_at,
        **fields,
    )
    bids = pa.array(min_bid, f64)
    has_spot = pc.fill_null(pc.not_equal(bids, 0), False)  # `if min_bid:` (null or 0: none)
    spot, spot_ok = instance_price_offers(
        provider=NAME,
        pricing=Pricing.SPOT.value,
        price_per_hour=bids.filter(has_spot),
        observed_at=observed_at,
        **{name: values.filter(has_spot) for name, values in fields.items()},
    )
    ok = pc.and_(od_ok, pc.replace_with_mask(pa.repeat(True, n), has_spot, spot_ok))
    positions = pa.array(range(n), pa.int64()) if index is None else pa.array(index, pa.int64())
    bad: list[int] = []
    if not pc.all(ok).as_py():
        bad = positions.filter(pc.invert(ok)).to_pylist()
        spot = spot.filter(ok.filter(has_spot))
        on_demand, positions, has_spot = (
            on_demand.filter(ok), positions.filter(ok), has_spot.filter(ok)
        )
    if spot.num_rows == 0:
        return on_demand, pc.multiply(positions, 2), bad
    keys = pa.concat_arrays(
        [pc.multiply(positions, 2), pc.add(pc.multiply(positions.filter(has_spot), 2), 1)]
    )
    table = pa.concat_tables([on_demand, spot])
    order = pc.sort_indices(keys)
    return table.take(order), keys.take(order), bad


def _table_of(offers: list[Offer]) -> pa.Table:
    columns = {name: [getattr(offer, name) for offer in offers] for name in OFFER_COLUMNS.names}
    for name in ("pricing", "form_factor"):
        columns[name] = [None if v is None else str(v) for v in columns[name]]
    return pa.table(columns, schema=OFFER_COLUMNS)


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc).replace("\n", "; ")


def _offers_of(record: dict[str, Any], observed_at: datetime) -> list[Offer]:
    gpu_count = record["num_gpus"]  # the offer refuses a count that is not whole (2.5)
    cpu_cores = record.get("cpu_cores")
    cores_effective = record.get("cpu_cores_effective")
    ram_gb = None
    if cpu_cores and cores_effective is not None and record.get("cpu_ram") is not None:
        # cpu_ram is the whole machine's MiB; an offer gets its share of the cores (gpuhunt).
        ram_gb = record["cpu_ram"] * (cores_effective / cpu_cores) / MIB_PER_GIB
    common: dict[str, Any] = {
        "provider": NAME,
        "offer_id": str(record["id"]),
        "gpu_raw": record["gpu_name"],
        "gpu_count": gpu_count,
        "vram_gb": record["gpu_ram"] / MIB_PER_GIB,
        "region": record.get("geolocation"),
        "available": bool(record.get("rentable", True)) and not record.get("rented", False),
        "observed_at": observed_at,
        "vcpus": cores_effective,
        "ram_gb": ram_gb,
        "disk_gb": record.get("disk_space"),
        "verified": record.get("verification") == "verified",
        "reliability": record.get("reliability2", record.get("reliability")),
    }
    offers = [
        Offer.from_instance_price(
            price_per_hour=float(record["dph_base"]), pricing=Pricing.ON_DEMAND, **common
        )
    ]
    min_bid = record.get("min_bid")
    if min_bid:
        offers.append(
            Offer.from_instance_price(price_per_hour=float(min_bid), pricing=Pricing.SPOT, **common)
        )
    return offers
