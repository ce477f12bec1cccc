"""Rows' combinations of text and flag values, each filter question over them evaluated once
(`warehouse.current.CurrentOffers` asks them): a row passes by one lookup of its combination.
The answers kept are bounded in bytes."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Mask", "ValueCombinations", "all_of"]

Mask = npt.NDArray[np.bool_]


def all_of(conditions: list[Mask]) -> Mask | None:
    """Where every condition holds (None: there is no condition, everything passes); the
    conditions themselves are left as they are."""
    if not conditions:
        return None
    mask = conditions[0].copy() if len(conditions) > 1 else conditions[0]
    for condition in conditions[1:]:
        mask &= condition
    return mask


class ValueCombinations:
    """Each row's combination of the values of every text and flag a filter reads (provider,
    pricing, country, available, ...), as one code. Those filters are evaluated once per
    combination (a few hundred for 100,000 benchmark offers) and kept per question of them
    (`passing`): a row then passes them by one lookup of its combination."""

    def __init__(
        self,
        columns: dict[str, np.ndarray],
        sizes: dict[str, int],
        names: tuple[str, ...],
        asked: tuple[Any, ...],
        bytes_kept: int,
    ) -> None:
        """`names`: the columns combined; `asked`: the filters (`warehouse.filters.Filter`) a
        question of them is, by their values; `bytes_kept`: the bound on answers kept."""
        values = [columns[name].astype(np.int64) for name in names]
        if math.prod(sizes[name] for name in names) < 2**63:
            # one number per row: its values in mixed radix (`sizes`: how many each column has)
            number, radix = np.zeros(len(values[0]), np.int64), 1
            for name, value in zip(names, values, strict=True):
                number += value * radix
                radix *= sizes[name]
            _, first, codes = np.unique(number, return_index=True, return_inverse=True)
        else:  # too many distinct values to number: rows compared whole (slower, as correct)
            stacked = np.stack(values, axis=1)
            _, first, codes = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
        self.codes: npt.NDArray[np.intp] = codes.reshape(-1).astype(np.intp)
        self.columns = {name: columns[name][first] for name in names}
        self._passing: dict[tuple[Any, ...], Mask | None] = {}
        self.asked, self.bytes_kept, self.kept_bytes = asked, bytes_kept, 0

    def passing(
        self,
        values: list[Any],
        conditions: Callable[[dict[str, np.ndarray], list[Any]], list[Mask]],
    ) -> Mask | None:
        """Which combinations pass the text and flag filters given `values` (one per filter
        `asked`), by `conditions` over each combination's values (None: every one passes)."""
        key = tuple(values)
        if key in self._passing:
            return self._passing[key]
        passing = all_of(conditions(self.columns, values))
        size = _KEY_BYTES + len(repr(key)) + (0 if passing is None else passing.nbytes)
        if self.kept_bytes + size > self.bytes_kept:
            self._passing.clear()  # the few asked often kept again as they are asked
            self.kept_bytes = 0
        if size <= self.bytes_kept:
            self._passing[key] = passing
            self.kept_bytes += size
        return passing


_KEY_BYTES = 256
"""What one kept question costs beyond its values' text and its mask (dict slot, tuple)."""
