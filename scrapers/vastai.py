"""Vast.ai: the public offer search (`POST /api/v0/bundles/`).

Quirks (see docs/pages/notes/provider-samples.md, "Vast.ai"):
- `dph_base` is USD per hour for the compute of the *whole offer* (all `num_gpus`); `dph_total`
  adds storage for `allocated_storage` GB. We publish `dph_base`: disk is billed separately at
  `storage_cost` USD per GB-month and depends on the disk size you pick (gpuhunt does the same).
- `min_bid` is the floor of an interruptible bid for the whole offer (vast-cli help; gpuhunt and
  SkyPilot use it as the spot price); `null` means no interruptible price.
- `gpu_ram` is MiB per GPU as the driver reports it, a little under the nominal size (24564 for a
  24 GB card, 81559 for an 80 GB H100): divided by 1024 and rounded to the whole GB here.
- `cpu_ram` is MiB of system RAM *of this offer* (already its share: on machines offered in
  several sizes it grows with the size; issue 15), so `ram_gb = cpu_ram / 1024`, as given.
- `min_bid` is rounded to 7 digits, and a bid above `dph_base` is a real market state (about
  10 % of records): the spot offer is published as it is. Quotes never prefer it to the same
  machine's on-demand offer (pipeline/workload/ranking.py).
- `rented` is not filtered by the backend (vast-cli PR #394): a rented offer is listed,
  not available.
- No pagination: without `limit` only 64 offers come back (gpuhunt issue #142).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import httpx
import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import OfferBatch, arange
from scrapers.errors import ProviderPayloadError
from scrapers.models import ParseResult, Pricing

NAME = "vastai"
ENV_KEY = "VASTAI_API_KEY"
KEY_REQUIRED = False  # gpuhunt searches without a key; a key only changes the rate-limit identity
URL = "https://console.vast.ai/api/v0/bundles/"
INTERVAL = timedelta(minutes=10)  # a marketplace: offers come and go within minutes
CURRENCY = "USD"
MIB_PER_GIB = 1024
SEARCH_LIMIT = 10_000
MAX_BYTES_PER_OFFER = 8 * 1024  # a recorded offer is ~2.4 KB; room for fields Vast.ai adds
MAX_ANSWER_BYTES = SEARCH_LIMIT * MAX_BYTES_PER_OFFER
"""A full search answer (SEARCH_LIMIT offers) is larger than the shared 32 MiB limit."""
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
        headers=headers,
        json=SEARCH_BODY,
        max_bytes=MAX_ANSWER_BYTES,
        auth_hint=f"check {ENV_KEY} or unset it (the search works without a key)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    """The offers of a search body, built column-wise from the fields read here.

    Records are decoded with strict field types (msgspec, numbers given as strings accepted); a
    record that does not fit (not an object, a missing or mistyped field) is a reject with
    msgspec's reason and the record as served.
    """
    try:
        typed = _BODY.decode(payload).offers
        raws: list[msgspec.Raw] | None = None
        positions = None
        misfits: list[tuple[int, str]] = []
    except msgspec.ValidationError:
        raws = _raw_records(payload)
        typed, positions, misfits = _decode_one_by_one(raws)
    except msgspec.DecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    typed, positions, out_of_range = _in_int64(typed, positions)
    records = _Records(payload, raws, typed, positions)
    batch = OfferBatch(NAME, observed_at, raw_of=records.raw, id_of=records.id)
    for position, reason in [*misfits, *out_of_range]:
        batch.reject(position, reason)
    if typed:
        _add_offers(batch, typed, positions)
    return batch.finish()


class _Record(msgspec.Struct, gc=False):
    """The fields read here, with their JSON types."""

    id: int
    num_gpus: int
    gpu_name: str
    gpu_ram: float
    dph_base: float
    min_bid: float | None = None
    geolocation: str | None = None
    rentable: bool | None = True  # null: not rentable
    rented: bool | None = False  # null: taken
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


_BODY = msgspec.json.Decoder(_Body, strict=False)
_RAW_BODY = msgspec.json.Decoder(_RawBody)
_RECORD = msgspec.json.Decoder(_Record, strict=False)
_INT64 = (-(2**63), 2**63 - 1)


class _Records:
    """The provider's records as served and their ids, looked up only for rejects."""

    def __init__(
        self,
        payload: bytes,
        raws: list[msgspec.Raw] | None,
        typed: list[_Record],
        positions: list[int] | None,
    ) -> None:
        self._payload, self._raws = payload, raws
        self._typed, self._positions = typed, positions
        self._ids: dict[int, int] | None = None

    def raw(self, position: int) -> str:
        if self._raws is None:
            self._raws = _raw_records(self._payload)
        return bytes(self._raws[position]).decode()

    def id(self, position: int) -> object:
        if self._ids is None:
            index = range(len(self._typed)) if self._positions is None else self._positions
            self._ids = {at: record.id for at, record in zip(index, self._typed, strict=True)}
        if position in self._ids:
            return self._ids[position]
        record = orjson.loads(self.raw(position))
        return record.get("id") if isinstance(record, dict) else None


def _raw_records(payload: bytes) -> list[msgspec.Raw]:
    try:
        return _RAW_BODY.decode(payload).offers
    except msgspec.ValidationError as exc:  # a DecodeError too: caught first
        raise ProviderPayloadError(f"{NAME}: body has no 'offers' list ({exc})") from exc
    except msgspec.DecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc


def _decode_one_by_one(
    raws: list[msgspec.Raw],
) -> tuple[list[_Record], list[int], list[tuple[int, str]]]:
    """Some record does not fit `_Record`: decode each on its own; the misfits are rejects."""
    typed: list[_Record] = []
    positions: list[int] = []
    misfits: list[tuple[int, str]] = []
    for position, raw in enumerate(raws):
        try:
            typed.append(_RECORD.decode(raw))
            positions.append(position)
        except msgspec.ValidationError as exc:
            misfits.append((position, str(exc)))
    return typed, positions, misfits


def _in_int64(
    typed: list[_Record], positions: list[int] | None
) -> tuple[list[_Record], list[int] | None, list[tuple[int, str]]]:
    """Records whose integers fit Arrow's 64 bits, and the others as rejects."""
    try:
        pa.array([r.id for r in typed], pa.int64())
        pa.array([r.num_gpus for r in typed], pa.int64())
        return typed, positions, []
    except (OverflowError, pa.ArrowException):
        pass
    low, high = _INT64
    index = range(len(typed)) if positions is None else positions
    kept: list[_Record] = []
    kept_positions: list[int] = []
    rejects: list[tuple[int, str]] = []
    for position, record in zip(index, typed, strict=True):
        if low <= record.id <= high and low <= record.num_gpus <= high:
            kept.append(record)
            kept_positions.append(position)
        else:
            rejects.append((position, "id or num_gpus is out of the 64-bit integer range"))
    return kept, kept_positions, rejects


def _add_offers(batch: OfferBatch, typed: list[_Record], positions: list[int] | None) -> None:
    """One on-demand offer per record and a spot offer where it has a bid, column-wise."""
    (ids, num_gpus, gpu_name, gpu_ram, dph_base, min_bid, geolocation, rentable, rented,
     cpu_cores_effective, cpu_ram, disk_space, verification, reliability2,
     reliability) = zip(*map(msgspec.structs.astuple, typed), strict=True)  # fmt: skip
    unset = msgspec.UNSET
    columns = {
        "offer_id": pc.cast(pa.array(ids, pa.int64()), pa.string()),
        "gpu_raw": pa.array(gpu_name, pa.string()),
        "gpu_count": pa.array(num_gpus, pa.int64()),
        "vram_gb": pc.round(_gb_of_mib(_f64(gpu_ram))),
        "region": pa.array(geolocation, pa.string()),
        "available": pc.and_(
            pc.fill_null(pa.array(rentable, pa.bool_()), False),
            pc.invert(pc.fill_null(pa.array(rented, pa.bool_()), True)),
        ),
        "vcpus": _f64(cpu_cores_effective),
        "ram_gb": _gb_of_mib(_f64(cpu_ram)),
        "disk_gb": _f64(disk_space),
        "verified": pc.fill_null(pc.equal(pa.array(verification, pa.string()), "verified"), False),
        "reliability": _f64(
            [r1 if r2 is unset else r2 for r2, r1 in zip(reliability2, reliability, strict=True)]
        ),
    }
    records = arange(len(typed)) if positions is None else pa.array(positions, pa.int64())
    n = len(records)
    on_demand = {"pricing": pa.repeat(pa.scalar(Pricing.ON_DEMAND.value), n)}
    batch.add_columns(
        records, "instance", {**columns, **on_demand, "price_per_hour": _f64(dph_base)}
    )
    bids = _f64(min_bid)
    has_spot = pc.fill_null(pc.not_equal(bids, 0), False)  # null or 0: no interruptible price
    spot = {name: values.filter(has_spot) for name, values in columns.items()}
    spot["pricing"] = pa.repeat(pa.scalar(Pricing.SPOT.value), len(spot["offer_id"]))
    spot["price_per_hour"] = bids.filter(has_spot)
    batch.add_columns(records.filter(has_spot), "instance", spot)


def _f64(values: Sequence[float | None]) -> pa.Array:
    """Doubles; an integer too large for Arrow to take as one is converted in Python."""
    try:
        return pa.array(values, pa.float64())
    except pa.ArrowInvalid:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())


def _gb_of_mib(mib: pa.Array) -> pa.Array:
    return pc.divide(mib, float(MIB_PER_GIB))
