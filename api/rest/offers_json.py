"""Offers as JSON bytes: the one writer of an offer object (the declared response model's keys,
`OfferOut`, in its order), of a JSON array of offers and of NDJSON lines, for every answer
`/offers` gives (`pipeline.market.serving.OffersAnswer`).

An answer names its offers by position in the copy that answered. Each offer is written once, by
itself (`orjson` of its row), and kept with the copy by position (`CurrentOffers.kept`: dropped
with the copy). The copy of the snapshots in force is written whole the first time it answers (in
a worker thread: `prepare`); a past copy only where asked. A page is then a join of bytes
already written, each closed with its `stale` mark.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from api.rest.schemas import OfferOut
from pipeline.market.serving import OffersAnswer
from warehouse.current import CurrentOffers

__all__ = ["OFFER_KEYS", "json_array", "ndjson_lines", "prepare", "ready", "write_offer"]

OFFER_KEYS = tuple(OfferOut.model_fields)
"""An offer object's keys in order: the copy's columns, then `stale`."""
_COLUMNS = list(OFFER_KEYS[:-1])
WRITE_ROWS = 4096
"""Offers of a copy read into Python and written per step."""
_STALE = {True: b',"stale":true}', False: b',"stale":false}'}
_BYTES_OBJECT = 41
"""What Python spends on one `bytes` beyond its content, with its place in a list."""


def write_offer(row: dict[str, Any]) -> bytes:
    """One offer (a row with `OfferOut`'s keys but `stale`, in order) as JSON, without its
    closing brace: `stale` goes last (tests/api/rest/test_offers_json.py holds the whole object
    to pydantic's)."""
    return orjson.dumps(row, option=orjson.OPT_UTC_Z)[:-1]


class _Written:
    """A copy's offers as JSON objects without their closing brace, by position."""

    def __init__(self, size: int) -> None:
        self.objects: npt.NDArray[np.object_] = np.full(size, b"", np.object_)
        """As a NumPy array of `bytes`: a page's are taken by one fancy index (a C loop; the
        objects lie scattered in memory, and a Python loop over them waited on each)."""
        self.done: npt.NDArray[np.bool_] = np.zeros(size, np.bool_)
        self.whole = size == 0
        self.lock = threading.Lock()


def _written(copy: CurrentOffers) -> _Written:
    return copy.kept("offers_json", lambda: _Written(copy.size))


def ready(answer: OffersAnswer) -> bool:
    """Whether `answer`'s offers can be joined now, with nothing to write first."""
    written = _written(answer.copy)
    return written.whole or bool(written.done[answer.positions].all())


def prepare(answer: OffersAnswer) -> None:
    """Write the offers `answer` needs that are not written yet: every offer of the copy in
    force (seconds for a large copy: call it off the event loop), a past copy's asked ones."""
    copy, positions = answer.copy, answer.positions
    written = _written(copy)
    with written.lock:
        asked = positions if answer.past else np.arange(copy.size)
        missing = asked[~written.done[asked]]
        for start in range(0, len(missing), WRITE_ROWS):
            at = missing[start : start + WRITE_ROWS]
            objects = [write_offer(row) for row in copy.rows_at(at, _COLUMNS)]
            written.objects[at] = objects
            written.done[at] = True
            copy.attached_bytes += sum(len(raw) + _BYTES_OBJECT for raw in objects)
        written.whole = bool(written.done.all())


def _piece(answer: OffersAnswer, start: int, stop: int, separator: bytes) -> bytes:
    """Offers `start:stop` of `answer`, each one JSON object closed with its `stale` mark,
    `separator` between them. Where every mark is the same (most pieces), one join with that
    mark in the separator: no object is copied but into the result."""
    objects = _written(answer.copy).objects
    opened: list[bytes] = objects[answer.positions[start:stop]].tolist()
    if not opened:
        return b""
    marks = answer.stale[start:stop]
    if marks.all() or not marks.any():
        close = _STALE[bool(marks[0])]
        return (close + separator).join(opened) + close
    return separator.join([raw + _STALE[s] for raw, s in zip(opened, marks.tolist(), strict=True)])


def json_array(answer: OffersAnswer, rows_per_piece: int) -> Iterator[bytes]:
    """The offers as one JSON array, `rows_per_piece` objects a piece, each made as asked."""
    yield b"["
    for start in range(0, answer.count, rows_per_piece):
        piece = _piece(answer, start, start + rows_per_piece, b",")
        yield b"," + piece if start else piece
    yield b"]"


def ndjson_lines(answer: OffersAnswer, rows_per_piece: int) -> Iterator[bytes]:
    """The offers as NDJSON, one object a line, `rows_per_piece` lines a piece."""
    for start in range(0, answer.count, rows_per_piece):
        yield _piece(answer, start, start + rows_per_piece, b"\n") + b"\n"
