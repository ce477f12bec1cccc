"""`GET /prices/history`'s points as JSON, with the JSON of whole days kept between requests.

The points of whole UTC days come from `history_days` (see `warehouse.rollups`), a year of
hourly points of one GPU being 365 pieces of a day's points per series, some 13 MB at 2,000
offers: reading them back is most of the answer's time. Each row carries `points_hash`, a hash
of its content, so a process keeps the pieces it has read (by series, day, interval and hash;
`KEPT_CHARS` at most, least recently used out) and reads only the hashes of the days again: a
day rewritten by a run (today, or an older day a replay changed) has a new hash and is read
again. Partial days at either end and partial buckets are read every time (a few rows), and so
are `1d` days (one point each: `KEPT_INTERVALS`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from itertools import groupby
from operator import itemgetter
from typing import Any

import duckdb

from warehouse.history import HistoryFilters, day_points_column, history_sql
from warehouse.offers import scope_conditions

__all__ = ["KEPT_CHARS", "KEPT_INTERVALS", "price_history_json"]

KEPT_CHARS = 64_000_000
"""Characters (bytes: the JSON is ASCII) of days' JSON a process keeps: a year of hourly points
of one GPU is ~14 M at 2,000 offers, of every GPU ~75 M."""
KEPT_INTERVALS = frozenset({"1h"})
"""Intervals whose days' JSON is kept: a day's 24 hourly points, not its one daily point (read
again, 0.6 MB a year per GPU, costs less than looking 3,650 days up)."""
_SERIES = ("gpu", "form_factor", "provider", "pricing")
_ORDER = "ORDER BY gpu, form_factor NULLS FIRST, provider, pricing, t"
_DAY = timedelta(days=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Series = tuple[str, str | None, str, str]
_Key = tuple[str, Series, int, int]
"""(interval, series, day as epoch microseconds, points_hash)."""


class _Kept:
    """Days' JSON by `_Key`, least recently used out past `limit` characters; thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pieces: OrderedDict[_Key, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: _Key) -> str | None:
        with self._lock:
            piece = self._pieces.get(key)
            if piece is not None:
                self._pieces.move_to_end(key)
            return piece

    def put(self, key: _Key, piece: str) -> None:
        with self._lock:
            if key in self._pieces:
                return
            self._pieces[key] = piece
            self._chars += len(piece)
            while self._chars > self.limit:
                _, dropped = self._pieces.popitem(last=False)
                self._chars -= len(dropped)


_KEPT = _Kept(KEPT_CHARS)


def price_history_json(
    conn: duckdb.DuckDBPyConnection, f: HistoryFilters
) -> list[tuple[str, str | None, str, str, str]]:
    """`(gpu, form_factor, provider, pricing, points as JSON)` per series: the same points as
    `price_history`, serialised by DuckDB (kept so in the rollups for whole buckets)."""
    kept = f.interval in KEPT_INTERVALS
    sql, params = history_sql(f, with_json=True, day_json=not kept)
    table = conn.execute(
        f"SELECT {', '.join(_SERIES)}, epoch_us(t) AS t_us, point_json, points_hash "
        f"FROM ({sql}) {_ORDER}",
        params,
    ).to_arrow_table()
    series: list[Series] = list(zip(*(table[name].to_pylist() for name in _SERIES), strict=True))
    days: list[int] = table["t_us"].to_pylist()
    hashes: list[int | None] = table["points_hash"].to_pylist()
    pieces: list[str | None] = table["point_json"].to_pylist()
    missing = []
    for i, points_hash in enumerate(hashes):
        if kept and points_hash is not None:
            pieces[i] = _KEPT.get((f.interval, series[i], days[i], points_hash))
            if pieces[i] is None:
                missing.append(i)
    if missing:
        first, last = min(days[i] for i in missing), max(days[i] for i in missing)
        read = _read_days(conn, f, _EPOCH + timedelta(microseconds=first),
                          _EPOCH + timedelta(microseconds=last) + _DAY)  # fmt: skip
        for i in missing:
            found = read.get((series[i], days[i]))
            if found is not None:  # else deleted since the hashes were read: left out
                points_hash, pieces[i] = found
                _KEPT.put((f.interval, series[i], days[i], points_hash), found[1])
    # Joined here rather than by an ordered `string_agg`, which copied each piece twice.
    rows = zip(series, pieces, strict=True)
    return [
        (*key, "[" + ",".join(piece for _, piece in group if piece is not None) + "]")
        for key, group in groupby(rows, key=itemgetter(0))
    ]


def _read_days(
    conn: duckdb.DuckDBPyConnection, f: HistoryFilters, since: datetime, until: datetime
) -> dict[tuple[Series, int], tuple[int, str]]:
    """`history_days` JSON of the days in `[since, until)` in `f`'s scope, with its hash."""
    params: list[Any] = [since, until]
    where = ["day >= ?", "day < ?", *scope_conditions(f.scope, params)]
    rows = conn.execute(
        f"SELECT {', '.join(_SERIES)}, epoch_us(day), points_hash, "
        f"{day_points_column(f.interval)} FROM history_days WHERE {' AND '.join(where)}",
        params,
    ).fetchall()
    return {(tuple(row[:4]), row[4]): (row[5], row[6]) for row in rows}
