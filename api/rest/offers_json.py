"""Offers as JSON bytes: the one writer of an offer object, of a JSON array (or page) of offers
and of NDJSON lines, for every answer `/offers` gives (`pipeline.market.serving.OffersAnswer`).

An answer from an in-memory copy of the offers names them by position: each offer of a copy is
written once, the first time an answer over that copy is written (`prepare`, in a worker
thread), and kept with the copy (dropped with it). A page is then a join of bytes already
written, each with its `stale` mark. Rows the warehouse returned are written as they come.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from api.rest.schemas import OfferOut
from pipeline.market.serving import OffersAnswer
from warehouse.current import CurrentOffers

__all__ = ["OFFER_KEYS", "json_array", "ndjson_lines", "prepare", "ready", "write_offers"]

OFFER_KEYS = tuple(OfferOut.model_fields)
"""An offer object's keys in order: the warehouse's columns, then `stale`."""
_COLUMNS = list(OFFER_KEYS[:-1])
WRITE_ROWS = 4096
"""Offers of a copy read into Python and written per step."""
_STALE = {True: b',"stale":true}', False: b',"stale":false}'}


def write_offers(rows: list[dict[str, Any]], keys: tuple[str, ...] = OFFER_KEYS) -> list[bytes]:
    """Each row (an offer with at least `keys`) as `OfferOut` serializes it (its `keys`), in one
    `orjson.dumps` of the list (tests/api/rest/test_offers_json.py holds it to pydantic's)."""
    if not rows:
        return []
    if tuple(rows[0]) != keys:  # the rows of one query share their keys
        rows = [{k: row[k] for k in keys} for row in rows]
    return _split_array(orjson.dumps(rows, option=orjson.OPT_UTC_Z), keys[0])


def _split_array(array: bytes, first_key: str) -> list[bytes]:
    """The objects of a JSON array of flat objects that all begin with `first_key`, each as its
    own bytes. A boundary is `},{"<first_key>":`, which no string holds: inside a string a quote
    is escaped (`\\"`), so `{"` never appears there unescaped."""
    if array == b"[]":
        return []
    boundary = b'},{"' + first_key.encode() + b'":'
    pieces = array[1:-2].split(boundary)  # without "[" and the last "}]"
    head = boundary[2:]
    return [pieces[0] + b"}", *(head + piece + b"}" for piece in pieces[1:])]


_written: weakref.WeakKeyDictionary[CurrentOffers, list[bytes]] = weakref.WeakKeyDictionary()
"""Each copy's offers as JSON objects without their closing brace, by position."""
_writing = threading.Lock()
_BYTES_OBJECT = 41
"""What Python spends on one `bytes` beyond its content, with its place in a list."""


def ready(answer: OffersAnswer) -> bool:
    """Whether `answer`'s offers can be joined now, with nothing to write first."""
    return answer.copy is None or answer.copy in _written


def prepare(answer: OffersAnswer) -> None:
    """Write every offer of `answer`'s copy, once per copy (seconds for a large copy: call it
    off the event loop)."""
    copy = answer.copy
    if copy is None or copy in _written:
        return
    with _writing:
        if copy in _written:
            return
        written: list[bytes] = []
        for start in range(0, copy.size, WRITE_ROWS):
            at = np.arange(start, min(copy.size, start + WRITE_ROWS))
            rows = write_offers(copy.rows_at(at, _COLUMNS), OFFER_KEYS[:-1])
            written += [raw[:-1] for raw in rows]  # without "}": `stale` goes last
        _written[copy] = written
        copy.attached_bytes = sum(len(raw) for raw in written) + _BYTES_OBJECT * len(written)


def _objects(answer: OffersAnswer, start: int, stop: int) -> list[bytes]:
    """Offers `start:stop` of `answer`, each one JSON object ending with its `stale` mark."""
    if answer.rows is not None:
        rows = answer.rows[start:stop]
        opened = [raw[:-1] for raw in write_offers(rows, OFFER_KEYS[:-1])]
    else:
        assert answer.copy is not None and answer.positions is not None
        written = _written[answer.copy]
        opened = [written[at] for at in answer.positions[start:stop].tolist()]
    marks = answer.stale[start:stop].tolist()
    return [raw + _STALE[s] for raw, s in zip(opened, marks, strict=True)]


def json_array(answer: OffersAnswer, rows_per_piece: int) -> Iterator[bytes]:
    """The offers as one JSON array, `rows_per_piece` objects a piece, each made as asked."""
    yield b"["
    for start in range(0, answer.count, rows_per_piece):
        piece = b",".join(_objects(answer, start, start + rows_per_piece))
        yield b"," + piece if start else piece
    yield b"]"


def ndjson_lines(answer: OffersAnswer, rows_per_piece: int) -> Iterator[bytes]:
    """The offers as NDJSON, one object a line, `rows_per_piece` lines a piece."""
    for start in range(0, answer.count, rows_per_piece):
        yield b"\n".join(_objects(answer, start, start + rows_per_piece)) + b"\n"
