"""Which prices per GPU-hour can be true: the plausible band, applied once at ingest.

The band scales with the GPU's memory, the catalog's one figure every GPU has
(`pipeline/data/gpus.csv`, `vram_gb`): an offer's price per GPU-hour, in USD, must lie within
`FLOOR_USD_PER_GB_HOUR` and `CEILING_USD_PER_GB_HOUR` times its VRAM. For a catalog GPU the
catalog's VRAM counts (a provider's own figure cannot widen the band); for an unknown name, the
VRAM the provider states; with none, the catalog's smallest VRAM for the floor and its largest
for the ceiling. So an 80 GB H100 must cost between 1 cent and 400 dollars a GPU-hour, a 24 GB
card between 0.3 cents and 120 dollars. An offer outside is a reject with its reason (kept in
the quarantine, never stored as an offer): 1e-320 $/h or 1e308 $/h is a broken record, not a
market price.

Inside the band, a price far from the market is judged by the outlier flag
(warehouse/quality.py) and held out of answers until confirmed (pipeline/market/suspects.py).
"""

from __future__ import annotations

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.catalog import Catalog
from scrapers.models import ParseResult, Reject

__all__ = ["CEILING_USD_PER_GB_HOUR", "FLOOR_USD_PER_GB_HOUR", "PriceBand", "within_band"]

FLOOR_USD_PER_GB_HOUR = 0.01 / 80
"""A cent per GPU-hour for 80 GB of memory (an H100): no rental of a whole GPU is cheaper; the
cheapest marketplace cards rent for several cents."""
CEILING_USD_PER_GB_HOUR = 400.0 / 80
"""400 dollars per GPU-hour for 80 GB: about 40 times the dearest on-demand H100 list price
(hyperscalers' ~$12); a price above is a unit slip or a broken record."""


class PriceBand:
    """The band of each offer, from the catalog's VRAM figures."""

    def __init__(self, catalog: Catalog) -> None:
        sizes = [v.vram_gb for v in catalog.variants if v.vram_gb > 0]
        self.smallest_vram_gb = min(sizes)
        self.largest_vram_gb = max(sizes)

    def bounds(self, vram_gb: pa.ChunkedArray) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
        """(floor, ceiling) in USD per GPU-hour for each offer's band VRAM (null: unknown)."""
        floor = pc.multiply(pc.fill_null(vram_gb, self.smallest_vram_gb), FLOOR_USD_PER_GB_HOUR)
        ceiling = pc.multiply(pc.fill_null(vram_gb, self.largest_vram_gb), CEILING_USD_PER_GB_HOUR)
        return floor, ceiling


def within_band(result: ParseResult, band_vram_gb: pa.ChunkedArray, band: PriceBand) -> ParseResult:
    """The offers whose USD price per GPU-hour is within their band; the others as rejects."""
    table = result.table
    if table.num_rows == 0:
        return result
    floor, ceiling = band.bounds(band_vram_gb)
    price = table["price_per_gpu_hour"]
    inside = pc.fill_null(
        pc.and_(pc.greater_equal(price, floor), pc.less_equal(price, ceiling)), False
    )
    if pc.all(inside).as_py():
        return result
    outside = pc.invert(inside)
    rejects = [
        Reject(
            row["provider"], row["offer_id"],
            f"price_per_gpu_hour {row['price_per_gpu_hour']!r} USD is outside the plausible "
            f"band {low:.4g}-{high:.4g} USD for {row['gpu'] or row['gpu_raw']} "
            f"({'VRAM unknown' if vram is None else f'{vram:g} GB'} x "
            f"{FLOOR_USD_PER_GB_HOUR:.6g}-{CEILING_USD_PER_GB_HOUR:g} USD per GB-hour)",
            orjson.dumps(row, default=str).decode(),
        )
        for row, low, high, vram in zip(
            table.filter(outside).to_pylist(),
            floor.filter(outside).to_pylist(),
            ceiling.filter(outside).to_pylist(),
            band_vram_gb.filter(outside).to_pylist(),
            strict=True,
        )
    ]  # fmt: skip
    return ParseResult(table.filter(inside), [*result.rejects, *rejects])
