"""Current offers written as JSON once per snapshot, and answers that join what was written.

`write_copy` writes every offer of an in-memory copy (`warehouse.current.CurrentOffers`) as the
front end's `RowEncoder` writes it, by position; an `EncodedAnswer` is the positions of one
answer over those bytes, with each offer's staleness, joined into a JSON array (whole or a piece
at a time) or NDJSON lines only as they are asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pipeline.market.freshness import ProviderFreshness, rate_stale_rows
from warehouse.current import CurrentOffers

__all__ = [
    "ENCODED_CHUNK",
    "EncodedAnswer",
    "RowEncoder",
    "WrittenCopy",
    "unwritten_copy",
    "write_copy",
]

ENCODED_CHUNK = 1024
"""Offers joined per piece of an encoded answer (an NDJSON stream sends it as it goes)."""
ENCODE_ROWS = 4096
"""Offers read into Python and encoded per step when a copy's JSON is made."""
_STALE = {True: b',"stale":true}', False: b',"stale":false}'}
_STALE_THEN_NEXT = {stale: end + b"," for stale, end in _STALE.items()}


@dataclass(frozen=True, slots=True)
class RowEncoder:
    """How a front end writes offers as JSON: the row keys it reads, in order, and the
    function that writes each row as one JSON object (without `stale`: the server adds it)."""

    columns: tuple[str, ...]
    encode: Callable[[list[dict[str, Any]]], list[bytes]]


@dataclass(slots=True)
class WrittenCopy:
    """Every offer of one copy as JSON (without its closing brace), by position, and whether
    its exchange rate makes it stale (`rate_is_stale`, fixed for the snapshot). A copy of a past
    time is written as it is asked (`write_missing`): until then a row is empty."""

    encoder: RowEncoder
    rows: list[bytes]
    sizes: npt.NDArray[np.int64]
    rate_stale: npt.NDArray[np.bool_]
    any_rate_stale: bool
    stale_of_providers: dict[frozenset[str], npt.NDArray[np.bool_]] = field(default_factory=dict)

    def write_missing(self, copy: CurrentOffers, positions: npt.NDArray[np.int64]) -> None:
        """Write the offers at `positions` that are not written yet, `ENCODE_ROWS` at a time."""
        missing = np.unique(positions[self.sizes[positions] == 0])
        for start in range(0, len(missing), ENCODE_ROWS):
            at = missing[start : start + ENCODE_ROWS]
            written = self.encoder.encode(copy.rows_at(at, list(self.encoder.columns)))
            opened = [raw[:-1] for raw in written]  # without "}": `stale` goes last
            for position, raw in zip(at.tolist(), opened, strict=True):
                self.rows[position] = raw
            self.sizes[at] = np.fromiter(map(len, opened), np.int64, len(opened))


@dataclass(frozen=True, slots=True)
class EncodedAnswer:
    """An answer's offers as JSON objects made before (`written`, at `positions` in the
    answer's order) and whether each is stale (`stale`: each offer's, or True / False for every
    offer): `array()` joins them (or `array_pieces()`, a piece at a time), `pieces()` streams
    them as NDJSON lines. Nothing is taken from `written` before a piece is asked for."""

    providers: list[ProviderFreshness]
    written: WrittenCopy
    positions: npt.NDArray[np.int64]
    stale: npt.NDArray[np.bool_] | bool

    @classmethod
    def empty(cls, encoder: RowEncoder) -> EncodedAnswer:
        nothing = np.zeros(0, np.int64)
        written = WrittenCopy(encoder, [], nothing, nothing.astype(np.bool_), False)
        return cls([], written, nothing, False)

    @property
    def count(self) -> int:
        return len(self.positions)

    def rows(self, start: int, stop: int) -> list[bytes]:
        rows = self.written.rows
        return [rows[at] for at in self.positions[start:stop].tolist()]

    def array(self, head: bytes = b"", tail: bytes = b"") -> bytes:
        """The offers as one JSON array, each object with its `stale` key last (between
        `head` and `tail`: a page is made in one join)."""
        if not self.count:
            return head + b"[]" + tail
        return b"".join((head, b"[", self._piece(0, self.count, self._shared_stale()), b"]", tail))

    def array_size(self) -> int:
        """How many bytes `array()` makes, without making it."""
        if isinstance(self.stale, bool):
            stale = self.count if self.stale else 0
        else:
            stale = int(self.stale.sum())
        ends = stale * len(_STALE[True]) + (self.count - stale) * len(_STALE[False])
        sizes = int(self.written.sizes[self.positions].sum())
        return 2 + sizes + ends + max(0, self.count - 1)

    def array_pieces(self, rows_per_piece: int) -> Iterator[bytes]:
        """`array()` in pieces of `rows_per_piece` objects, each made as it is asked for."""
        yield b"["
        shared = self._shared_stale()
        for start in range(0, self.count, rows_per_piece):
            piece = self._piece(start, start + rows_per_piece, shared)
            yield b"," + piece if start else piece
        yield b"]"

    def _shared_stale(self) -> bool | None:
        """Whether every offer is stale (True) or none is (False); None when they differ."""
        if isinstance(self.stale, bool):
            return self.stale
        if not self.stale.any():
            return False
        return True if self.stale.all() else None

    def _piece(self, start: int, stop: int, shared: bool | None) -> bytes:
        """Objects `start:stop`, comma-separated."""
        if shared is None:
            return b",".join(self._ended(start, stop))
        return _STALE_THEN_NEXT[shared].join(self.rows(start, stop)) + _STALE[shared]

    def pieces(self) -> Iterator[list[bytes]]:
        """The objects, `ENCODED_CHUNK` at a time (an NDJSON stream sends them as it goes)."""
        for start in range(0, self.count, ENCODED_CHUNK):
            yield self._ended(start, start + ENCODED_CHUNK)

    def _ended(self, start: int, stop: int) -> list[bytes]:
        if isinstance(self.stale, bool):
            end = _STALE[self.stale]
            return [row + end for row in self.rows(start, stop)]
        stale = self.stale[start:stop].tolist()
        return [row + _STALE[s] for row, s in zip(self.rows(start, stop), stale, strict=True)]


def unwritten_copy(copy: CurrentOffers, encoder: RowEncoder) -> WrittenCopy:
    """A copy's `WrittenCopy` with no offer written yet (see `WrittenCopy.write_missing`)."""
    sizes, rate_stale = np.zeros(copy.size, np.int64), rate_stale_rows(copy.table)
    return WrittenCopy(encoder, [b""] * copy.size, sizes, rate_stale, bool(rate_stale.any()))


def write_copy(copy: CurrentOffers, encoder: RowEncoder) -> WrittenCopy:
    """Every offer of `copy` as `encoder` writes it, by position (seconds for 100,000 offers:
    made off the event loop)."""
    made = unwritten_copy(copy, encoder)
    made.write_missing(copy, np.arange(copy.size, dtype=np.int64))
    return made
