"""The catalog's figures behind the offers' derived columns, in the one form the SQL joins.

`price_per_pflop_hour` divides an offer's price per GPU-hour by its GPU's dense BF16 PFLOP/s
(FP16 where the card has no BF16: the catalog's `fp16_tflops_dense`, equal to the BF16 figure on
cards that have it); `nvlink` is the catalog's NVLink column (`yes`: true; `bridge`: unknown, a
bridge may or may not be fitted; `no`, `xgmi`: false); `vendor` is the catalog's, in lower case
(`nvidia`, `amd`), what the `vendor` filter compares. All are computed in SQL
(`warehouse.offers.offers_relation`) from the figures made here once per catalog.

An offer whose form factor is unknown gets its GPU's figures in any form: the lowest compute of
its forms (the conservative price per PFLOP-hour) and NVLink only where every form agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from pipeline.catalog import Catalog, GpuVariant
from warehouse.offers import GpuFigure

__all__ = ["gpu_figures"]

TFLOPS_PER_PFLOPS = 1000.0
_NVLINK = {"yes": True, "no": False, "xgmi": False}
"""The catalog's `nvlink` column; any other value (`bridge`) leaves it unknown."""


def _dense_pflops(variant: GpuVariant) -> float | None:
    tflops = variant.bf16_tflops_dense if variant.bf16 else variant.fp16_tflops_dense
    return tflops / TFLOPS_PER_PFLOPS if tflops else None


def _any_form(gpu: str, variants: Sequence[GpuVariant]) -> GpuFigure:
    pflops = [p for v in variants if (p := _dense_pflops(v)) is not None]
    links = {_NVLINK.get(v.nvlink) for v in variants}
    nvlink = links.pop() if len(links) == 1 else None
    return GpuFigure(gpu, None, min(pflops) if pflops else None, nvlink, _vendor(variants))


def _vendor(variants: Sequence[GpuVariant]) -> str | None:
    vendors = {v.vendor.strip().lower() for v in variants if v.vendor.strip()}
    return vendors.pop() if len(vendors) == 1 else None


@lru_cache(maxsize=4)
def gpu_figures(catalog: Catalog) -> tuple[GpuFigure, ...]:
    """One figure per catalog row with a form factor, and one per GPU id for any form."""
    figures: list[GpuFigure] = []
    for gpu in catalog.ids:
        variants = catalog.variants_of(gpu)
        plain = [v for v in variants if v.form_factor is None]
        figures += [
            GpuFigure(
                gpu, str(v.form_factor), _dense_pflops(v), _NVLINK.get(v.nvlink), _vendor([v])
            )
            for v in variants
            if v.form_factor is not None
        ]
        figures.append(_any_form(gpu, plain or variants))
    return tuple(figures)
