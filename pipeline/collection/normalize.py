"""From a parser's offers to the column batch the warehouse stores.

Provider-agnostic: resolve each GPU name through the catalog, drop duplicate keys and offers that
break a cross-offer invariant (spot above on-demand for the same offer) into the quarantine.
Resolution runs once per distinct (gpu_raw, vram_gb) and (provider, region), not per offer. A
result a parser handed over as a table (`ParseResult.table`) is normalized column-wise and stays
a table; a list of offers is normalized offer by offer, with the same outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.catalog import Catalog, Resolution
from pipeline.location import Location, Locator, get_locator
from scrapers.models import Offer, ParseResult, Pricing, Reject
from warehouse import OFFER_SCHEMA, REJECT_SCHEMA

__all__ = ["normalize", "offers_to_table", "rejects_to_table"]


class _Memo:
    """Catalog and location look-ups, once per distinct key."""

    def __init__(self, catalog: Catalog, locator: Locator) -> None:
        self._catalog, self._locator = catalog, locator
        self._gpus: dict[tuple[str, float | None], Resolution] = {}
        self._places: dict[tuple[str, str | None], Location] = {}

    def resolve(self, gpu_raw: str, vram_gb: float | None) -> Resolution:
        key = (gpu_raw, vram_gb)
        found = self._gpus.get(key)
        if found is None:
            found = self._gpus[key] = self._catalog.resolve(gpu_raw, vram_gb)
        return found

    def locate(self, provider: str, region: str | None) -> Location:
        key = (provider, region)
        found = self._places.get(key)
        if found is None:
            found = self._places[key] = self._locator.locate(provider, region)
        return found


def _resolved(offer: Offer, memo: _Memo) -> Offer:
    place = memo.locate(offer.provider, offer.region)
    update: dict[str, object] = {
        "country": place.country,
        "continent": place.continent,
        "eea": place.eea,
        "eu": place.eu,
    }
    resolution = memo.resolve(offer.gpu_raw, offer.vram_gb)
    if resolution.gpu is not None:
        update |= {
            "gpu": resolution.gpu,
            "form_factor": resolution.form_factor or offer.form_factor,
            "vram_gb": resolution.vram_gb or offer.vram_gb,
        }
    return offer.model_copy(update=update)


def _reject(offer: Offer, reason: str) -> Reject:
    return Reject(
        provider=offer.provider,
        record_id=offer.offer_id,
        reason=reason,
        raw=offer.model_dump_json(),
    )


def _duplicate_reason(offer: Offer) -> str:
    return f"duplicate offer_id {offer.offer_id!r} ({offer.pricing})"


def _spot_reason(spot_price: float, on_demand_price: float) -> str:
    return f"spot price {spot_price} above on-demand {on_demand_price} for the same offer"


def normalize(result: ParseResult, catalog: Catalog, locator: Locator | None = None) -> ParseResult:
    """Resolve GPUs and places; keep the first offer per (offer_id, pricing), quarantine others."""
    memo = _Memo(catalog, locator or get_locator())
    if result.table is not None:
        return _normalize_table(result.table, list(result.rejects), memo)
    rejects = list(result.rejects)
    by_key: dict[tuple[str, Pricing], Offer] = {}
    for offer in result.offers:
        key = (offer.offer_id, offer.pricing)
        if key in by_key:
            rejects.append(_reject(offer, _duplicate_reason(offer)))
            continue
        by_key[key] = _resolved(offer, memo)

    offers: list[Offer] = []
    for (offer_id, pricing), offer in by_key.items():
        on_demand = by_key.get((offer_id, Pricing.ON_DEMAND))
        if (
            pricing is Pricing.SPOT
            and on_demand is not None
            and offer.price_per_hour > on_demand.price_per_hour
        ):
            rejects.append(
                _reject(offer, _spot_reason(offer.price_per_hour, on_demand.price_per_hour))
            )
            continue
        offers.append(offer)
    return ParseResult(offers=offers, rejects=rejects)


# --- the same, column-wise -------------------------------------------------------------------


def _offers_at(table: pa.Table, rows: Sequence[int]) -> list[Offer]:
    return [Offer(**row) for row in table.take(pa.array(rows, pa.int64())).to_pylist()]


def _normalize_table(table: pa.Table, rejects: list[Reject], memo: _Memo) -> ParseResult:
    table = table.combine_chunks()
    duplicates = _duplicate_rows(table)
    if duplicates:
        rejects += [_reject(o, _duplicate_reason(o)) for o in _offers_at(table, duplicates)]
        keep = pc.invert(_mask(table.num_rows, duplicates))
        table = table.filter(keep).combine_chunks()
    table = _resolve_columns(table, memo)
    too_high = _spot_above_on_demand(table)
    if too_high:
        on_demand = _on_demand_prices(table)
        rejects += [
            _reject(o, _spot_reason(o.price_per_hour, on_demand[o.offer_id]))
            for o in _offers_at(table, too_high)
        ]
        table = table.filter(pc.invert(_mask(table.num_rows, too_high)))
    return ParseResult.from_table(table, rejects)


def _mask(n: int, rows: Sequence[int]) -> pa.Array:
    return pc.is_in(pa.array(range(n), pa.int64()), value_set=pa.array(rows, pa.int64()))


def _duplicate_rows(table: pa.Table) -> list[int]:
    """Rows whose (offer_id, pricing) an earlier row already has."""
    keys = table.select(["offer_id", "pricing"])
    if keys.group_by(["offer_id", "pricing"]).aggregate([]).num_rows == table.num_rows:
        return []
    seen: set[tuple[str, str]] = set()
    duplicates = []
    for row, key in enumerate(
        zip(keys["offer_id"].to_pylist(), keys["pricing"].to_pylist(), strict=True)
    ):
        if key in seen:
            duplicates.append(row)
        seen.add(key)
    return duplicates


def _distinct(columns: Sequence[pa.Array]) -> tuple[list[tuple[Any, ...]], pa.Array]:
    """The distinct key tuples over `columns`, and for each row the position of its key."""
    code: pa.Array | None = None
    dictionaries = []
    for column in columns:
        encoded = pc.dictionary_encode(column)
        index = pc.add(pc.fill_null(pc.cast(encoded.indices, pa.int64()), -1), 1)  # null: 0
        size = len(encoded.dictionary) + 1
        code = index if code is None else pc.add(pc.multiply(code, size), index)
        dictionaries.append((encoded.dictionary.to_pylist(), size))
    assert code is not None
    unique = pc.unique(code)
    keys = []
    for value in unique.to_pylist():
        key: list[Any] = []
        for values, size in reversed(dictionaries):
            value, index = divmod(value, size)
            key.append(None if index == 0 else values[index - 1])
        keys.append(tuple(reversed(key)))
    return keys, pc.index_in(code, value_set=unique)


def _mapped(
    columns: Sequence[pa.Array],
    look_up: Callable[..., Hashable],
    fields: dict[str, pa.DataType],
) -> dict[str, pa.Array]:
    """`look_up(*key)` once per distinct key; each of its `fields` as a column over the rows."""
    keys, positions = _distinct(columns)
    found = [look_up(*key) for key in keys]
    return {
        name: pa.array([_plain(getattr(f, name)) for f in found], type_).take(positions)
        for name, type_ in fields.items()
    }


def _plain(value: Any) -> Any:
    return value.value if hasattr(value, "value") else value  # enum → its string


def _resolve_columns(table: pa.Table, memo: _Memo) -> pa.Table:
    if table.num_rows == 0:
        return table
    place = _mapped(
        [table["provider"].combine_chunks(), table["region"].combine_chunks()],
        memo.locate,
        {name: OFFER_SCHEMA.field(name).type for name in ("country", "continent", "eea", "eu")},
    )
    res = _mapped(
        [table["gpu_raw"].combine_chunks(), table["vram_gb"].combine_chunks()],
        memo.resolve,
        {"gpu": pa.string(), "form_factor": pa.string(), "vram_gb": pa.float64()},
    )
    known = pc.is_valid(res["gpu"])
    # As `_resolved`: gpu from the catalog; form factor and VRAM too unless it has none.
    columns = {
        "gpu": pc.if_else(known, res["gpu"], table["gpu"]),
        "form_factor": pc.if_else(
            pc.and_(known, pc.is_valid(res["form_factor"])),
            res["form_factor"],
            table["form_factor"],
        ),
        "vram_gb": pc.if_else(
            pc.fill_null(pc.and_(known, pc.not_equal(res["vram_gb"], 0)), False),
            res["vram_gb"],
            table["vram_gb"],
        ),
        **place,
    }
    for name, values in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, values)
    return table


def _spot_above_on_demand(table: pa.Table) -> list[int]:
    """Rows of spot offers dearer than the on-demand offer with the same id."""
    is_spot = pc.equal(table["pricing"], Pricing.SPOT.value)
    if not pc.any(is_spot).as_py():
        return []
    spot = pa.table(
        {
            "offer_id": table["offer_id"].filter(is_spot),
            "row": pc.indices_nonzero(is_spot),
            "price": table["price_per_hour"].filter(is_spot),
        }
    )
    is_on_demand = pc.equal(table["pricing"], Pricing.ON_DEMAND.value)
    on_demand = pa.table(
        {
            "offer_id": table["offer_id"].filter(is_on_demand),
            "on_demand_price": table["price_per_hour"].filter(is_on_demand),
        }
    )
    joined = spot.join(on_demand, keys="offer_id", join_type="inner")
    dearer = joined.filter(pc.greater(joined["price"], joined["on_demand_price"]))
    return sorted(dearer["row"].to_pylist())


def _on_demand_prices(table: pa.Table) -> dict[str, float]:
    is_on_demand = pc.equal(table["pricing"], Pricing.ON_DEMAND.value)
    return dict(
        zip(
            table["offer_id"].filter(is_on_demand).to_pylist(),
            table["price_per_hour"].filter(is_on_demand).to_pylist(),
            strict=True,
        )
    )


def offers_to_table(offers: Sequence[Offer] | ParseResult) -> pa.Table:
    """Column-wise Arrow batch in the warehouse's offer schema (a result's own table if it has
    one)."""
    if isinstance(offers, ParseResult):
        if offers.table is not None:
            return offers.table.cast(OFFER_SCHEMA)
        offers = offers.offers
    columns = {name: [getattr(offer, name) for offer in offers] for name in OFFER_SCHEMA.names}
    for name in ("pricing", "form_factor"):
        columns[name] = [None if v is None else str(v) for v in columns[name]]
    return pa.table(columns, schema=OFFER_SCHEMA)


def rejects_to_table(rejects: Sequence[Reject], observed_at: object) -> pa.Table:
    return pa.table(
        {
            "provider": [r.provider for r in rejects],
            "record_id": [r.record_id for r in rejects],
            "reason": [r.reason for r in rejects],
            "raw": [
                r.raw if isinstance(r.raw, str) else orjson.dumps(r.raw).decode() for r in rejects
            ],
            "observed_at": [observed_at] * len(rejects),
        },
        schema=REJECT_SCHEMA,
    )
