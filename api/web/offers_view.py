"""The offers table as the page shows it: cheapest per GPU, sorted by any column, ages in words."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.market.offer_groups import column_of
from pipeline.market.serving import OffersAnswer
from warehouse.offers import SORT_FIELDS

__all__ = [
    "COLUMNS",
    "Column",
    "View",
    "age_words",
    "cheapest_per_gpu",
    "duration_words",
    "gpu_label",
    "sort_rows",
    "sort_values",
]

View = Literal["cheapest", "all"]
SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    header: str
    numeric: bool = False


COLUMNS: tuple[Column, ...] = (
    Column("gpu", "GPU"),
    Column("provider", "Provider"),
    Column("pricing", "Pricing"),
    Column("price_per_gpu_hour", "$/GPU-hour", numeric=True),
    Column("price_per_hour", "$/hour", numeric=True),
    Column("gpu_count", "GPUs", numeric=True),
    Column("vram_gb", "VRAM (GB)", numeric=True),
    Column("price_per_pflop_hour", "$/PFLOP-hour", numeric=True),
    Column("reliability", "Reliability", numeric=True),
    Column("region", "Region"),
    Column("available", "Available"),
)
SORT_KEYS = frozenset(c.key for c in COLUMNS) | frozenset(SORT_FIELDS)
"""The columns, and any numeric offer field (vCPUs, RAM, disk) by its name in the URL."""


def gpu_label(row: Mapping[str, Any]) -> str:
    """`H100-80GB SXM`; a GPU the catalog lacks shows the provider's own spelling."""
    name = row["gpu"] or f"{row['gpu_raw']} (unknown)"
    return f"{name} {row['form_factor']}" if row.get("form_factor") else name


def cheapest_per_gpu(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The cheapest offer per GPU (and form factor) × provider × pricing; `offers`: of how many.

    Ties keep the first row, so an available offer listed first wins over a sold-out one.
    """
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for row in rows:
        key = (row["gpu"] or row["gpu_raw"], row["form_factor"], row["provider"], row["pricing"])
        counts[key] = counts.get(key, 0) + 1
        if key not in best or row["price_per_gpu_hour"] < best[key]["price_per_gpu_hour"]:
            best[key] = dict(row)
    return [{**row, "offers": counts[key]} for key, row in best.items()]


def _sort_value(row: Mapping[str, Any], key: str) -> tuple[int, Any]:
    if key == "gpu":
        return (0, gpu_label(row).lower())
    value = row.get(key)
    if value is None:
        return (1, 0)  # unknown values last, whichever the order
    return (0, value.lower() if isinstance(value, str) else value)


def sort_rows(
    rows: Sequence[Mapping[str, Any]], key: str, descending: bool = False
) -> list[Mapping[str, Any]]:
    """Rows by `key` (cheapest per GPU-hour breaks ties); unknown values stay last."""
    by_price = sorted(rows, key=lambda r: r["price_per_gpu_hour"])
    if key not in SORT_KEYS:
        return by_price
    known = [r for r in by_price if r.get(key) is not None]
    unknown = [r for r in by_price if r.get(key) is None]
    return sorted(known, key=lambda r: _sort_value(r, key), reverse=descending) + unknown


def sort_values(answer: OffersAnswer, key: str) -> pa.Array | None:
    """What `sort_rows` compares of each of `answer`'s offers, as one Arrow array (None: a key
    it does not sort by, the answer's order stands): text lowercased, a GPU by its label."""
    if key not in SORT_KEYS:
        return None
    if key != "gpu":
        values = column_of(answer, key)
        return pc.utf8_lower(values) if pa.types.is_string(values.type) else values
    gpu, raw, form = (column_of(answer, name) for name in ("gpu", "gpu_raw", "form_factor"))
    name = pc.if_else(pc.is_null(gpu), pc.binary_join_element_wise(raw, " (unknown)", ""), gpu)
    labelled = pc.if_else(pc.is_null(form), name, pc.binary_join_element_wise(name, form, " "))
    return pc.utf8_lower(labelled)


def duration_words(seconds: float) -> str:
    """`45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`."""
    if seconds < SECONDS_PER_MINUTE:
        return f"{int(seconds)} s"
    minutes = int(seconds // SECONDS_PER_MINUTE)
    if seconds < SECONDS_PER_HOUR:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if seconds < SECONDS_PER_DAY:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def age_words(seconds: float | None) -> str:
    """`just now`, `12 min ago`, `3 h 5 min ago`; `never` when there is no time at all."""
    if seconds is None:
        return "never"
    if seconds < SECONDS_PER_MINUTE:
        return "just now"
    return f"{duration_words(seconds)} ago"
