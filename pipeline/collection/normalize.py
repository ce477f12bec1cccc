"""From a parser's offer table to the table the warehouse stores: GPU and place resolved.

Provider-agnostic and column-wise: each GPU name resolves through the catalog and each region
through the locator once per distinct (gpu_raw, vram_gb) and (provider, region), not per offer.
The parser's checks (scrapers/batch.py) already quarantined bad records and repeated keys; a spot
price above the same machine's on-demand price is a market fact and stays (issue 15).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.catalog import Catalog, Resolution
from pipeline.collection.plausible import PriceBand, within_band
from pipeline.location import Location, Locator, get_locator
from scrapers.models import OFFER_SCHEMA, ParseResult

__all__ = ["normalize"]


class _Memo:
    """Catalog and location look-ups, once per distinct key (for one run)."""

    def __init__(self, catalog: Catalog, locator: Locator) -> None:
        self.resolve: Callable[[str, float | None], Resolution] = cache(catalog.resolve)
        self.locate: Callable[[str, str | None], Location] = cache(locator.locate)


def normalize(result: ParseResult, catalog: Catalog, locator: Locator | None = None) -> ParseResult:
    """The parser's offers with canonical GPU, form factor, VRAM and place filled in; those
    priced outside the plausible band (pipeline/collection/plausible.py) moved to the rejects."""
    memo = _Memo(catalog, locator or get_locator())
    table, band_vram_gb = _resolve_columns(result.table, memo)
    resolved = ParseResult(table, list(result.rejects))
    return within_band(resolved, band_vram_gb, PriceBand(catalog))


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


def _resolve_columns(table: pa.Table, memo: _Memo) -> tuple[pa.Table, pa.ChunkedArray]:
    """The resolved table, and each offer's VRAM for its price band: the catalog's for a catalog
    GPU, else the provider's (null: unknown)."""
    if table.num_rows == 0:
        return table, table["vram_gb"]
    table = table.combine_chunks()
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
    # gpu from the catalog; its form factor unless it has none; the provider's VRAM where it
    # states one (CoreWeave's HGX B300: 270 GB), else the catalog's nominal size.
    catalog_vram = pc.if_else(
        pc.fill_null(pc.and_(known, pc.not_equal(res["vram_gb"], 0)), False),
        res["vram_gb"],
        pa.scalar(None, pa.float64()),
    )
    columns = {
        "gpu": pc.if_else(known, res["gpu"], table["gpu"]),
        "form_factor": pc.if_else(
            pc.and_(known, pc.is_valid(res["form_factor"])),
            res["form_factor"],
            table["form_factor"],
        ),
        "vram_gb": pc.coalesce(table["vram_gb"], catalog_vram),
        **place,
    }
    band_vram_gb = pc.coalesce(catalog_vram, table["vram_gb"])
    for name, values in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, values)
    return table, band_vram_gb
