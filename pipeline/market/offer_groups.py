"""Summaries of an answer's offers made over the in-memory copy's columns, not its rows.

A page that shows the cheapest offer per GPU and provider, or one line per GPU, needs a few
hundred offers out of tens of thousands: `cheapest_per` groups the answer's positions with NumPy
and reads only each group's cheapest offer as a row, with how many offers the group holds and
the largest memory among them. `sorted_page` orders an answer by one column and reads only the
first offers. Nothing is kept: what is made is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.market.serving import OffersAnswer

__all__ = ["GPU_KEY", "cheapest_per", "column_of", "sorted_page"]

GPU_KEY = "gpu_or_raw"
"""A key of `cheapest_per`: the catalog's GPU id, else the provider's own spelling."""


def _column(table: pa.Table, name: str) -> pa.ChunkedArray | pa.Array:
    if name == GPU_KEY:
        return pc.coalesce(table.column("gpu"), table.column("gpu_raw"))
    return table.column(name)


def _codes(column: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.int64]:
    """Each value as a number, equal values equal (NULL its own number)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    size = len(encoded.dictionary)
    return np.asarray(pc.fill_null(encoded.indices, size).to_numpy(), dtype=np.int64)


def cheapest_per(
    answer: OffersAnswer, keys: Sequence[str], *, available_only: bool = False
) -> list[dict[str, Any]]:
    """The first offer of each group of `answer`'s offers that share `keys` (columns, or
    `GPU_KEY`), in the answer's order, which is the cheapest when the answer is cheapest per
    GPU-hour first (ties: the first listed); `offers`: how many the group holds, and
    `max_vram_gb`: the most memory among them. `available_only`: of available offers only."""
    copy, positions = answer.copy, answer.positions
    if not len(positions):
        return []
    taken = pa.array(positions, pa.int64())
    names = {"gpu", "gpu_raw", "available", "vram_gb", *(k for k in keys if k != GPU_KEY)}
    table = copy.table.select(sorted(names)).take(taken)
    at = np.arange(len(positions))
    if available_only:
        at = at[pc.fill_null(table.column("available"), False).to_numpy(zero_copy_only=False)]
    if not len(at):
        return []
    codes = np.stack([_codes(_column(table, key))[at] for key in keys], axis=1)
    _, first, group, counts = np.unique(
        codes, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    group = group.reshape(-1)
    vram = pc.fill_null(pc.cast(table.column("vram_gb"), pa.float64()), np.nan).to_numpy()[at]
    most = np.full(len(first), np.nan)
    np.fmax.at(most, group, vram)
    order = np.argsort(first, kind="stable")  # groups in the order their first offers come
    firsts = at[first[order]]
    picked = replace(answer, stale=answer.stale[firsts], positions=positions[firsts])
    return [
        {**row, "offers": int(n), "max_vram_gb": None if np.isnan(v) else float(v)}
        for row, n, v in zip(picked.offers, counts[order], most[order], strict=True)
    ]


def sorted_page(
    answer: OffersAnswer, values: pa.Array | None, descending: bool, count: int
) -> OffersAnswer:
    """The first `count` offers of `answer` ordered by `values` (one per offer, in the
    answer's order; None: the answer's order), unknown values last whichever the order, ties
    in the answer's order."""
    if values is None:
        order = np.arange(min(count, answer.count))
    else:
        table = pa.table({"value": values})
        way = "descending" if descending else "ascending"
        order = pc.sort_indices(table, sort_keys=[("value", way, "at_end")])
        order = order.to_numpy()[:count]
    return replace(answer, stale=answer.stale[order], positions=answer.positions[order])


def column_of(answer: OffersAnswer, name: str) -> pa.Array:
    """One column of `answer`'s offers, in its order."""
    taken = answer.copy.table.column(name).take(pa.array(answer.positions, pa.int64()))
    return taken.combine_chunks()
