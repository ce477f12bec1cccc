"""Every declared filter (`warehouse.filters.FILTERS`) is applied by the one engine of offer
questions (`CurrentOffers`) as its comparison says, over generated offers: what it keeps passes
every filter given, what it leaves out fails one, in the order asked."""

from __future__ import annotations

import random
from dataclasses import fields
from datetime import UTC, date, datetime
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapers.models import OFFER_SCHEMA
from warehouse.current import CurrentOffers
from warehouse.filters import FILTERS, Filter
from warehouse.offers import SORT_FIELDS, GpuFigure, OfferFilters, sort_columns

OBSERVED_AT = datetime(2026, 1, 5, 12, tzinfo=UTC)
FIGURES = (
    GpuFigure("H100-80GB", "SXM", 0.989, True, "nvidia"),
    GpuFigure("H100-80GB", None, 0.756, None, "nvidia"),
    GpuFigure("A100-80GB", None, 0.312, None, "nvidia"),
    GpuFigure("MI300X", None, 1.307, False, "amd"),
)
DERIVED = {"vendor": {f.gpu: f.vendor for f in FIGURES}}
"""The derived text columns a filter compares: the figure's value of the row's GPU."""
TEXTS = {
    "gpu": ["H100-80GB", "A100-80GB", "MI300X", "RTX 4090", None],
    "provider": ["vastai", "runpod", "lambda"],
    "seller": ["lambda", "massedcompute", None],
    "pricing": ["on_demand", "spot"],
    "form_factor": ["SXM", "PCIe", None],
    "region": ["us-texas-1", "EU-SE-1", "Sweden", "texas", None],
    "country": ["US", "SE", "DE", None],
    "continent": ["Europe", "North America", None],
}
NUMBERS = {
    "gpu_count": [1, 2, 4, 8],
    "vram_gb": [24.0, 80.0, 141.0, None],
    "reliability": [0.5, 0.9, 0.99, None],
    "vcpus": [8.0, 32.0, None],
    "ram_gb": [64.0, 512.0, None],
    "disk_gb": [100.0, 2000.0, None],
}
FLAGS = ("available", "verified", "eea", "eu")


def offer(pick: Any, n: int) -> dict[str, Any]:
    """One offer with every filtered column drawn by `pick` (a choice among values)."""
    row: dict[str, Any] = {name: pick(values) for name, values in {**TEXTS, **NUMBERS}.items()}
    row.update({name: pick([True, False, None]) for name in FLAGS})
    row["available"] = row["available"] is not False  # stored as true or false
    price = pick([0.3, 1.25, 2.0, 2.5, 9.9])
    row.update(
        offer_id=f"o{n}", gpu_raw=row["gpu"] or "mystery", price_per_gpu_hour=price,
        price_per_hour=round(price * row["gpu_count"], 4), price_quoted_per="gpu",
        observed_at=OBSERVED_AT, currency="USD", price_per_hour_native=price * row["gpu_count"],
        fx_date=date(2026, 1, 2),
    )  # fmt: skip
    return row


def connection(rows: list[dict[str, Any]]) -> duckdb.DuckDBPyConnection:
    """An in-memory database whose `current_offers` holds `rows`."""
    table = pa.Table.from_pylist(rows, schema=OFFER_SCHEMA)
    table = table.append_column("run_id", pa.array(["r1"] * len(rows), pa.string()))
    conn = duckdb.connect()
    conn.register("generated", table)
    conn.execute("CREATE TABLE current_offers AS SELECT * FROM generated")
    return conn


def values_of(f: Filter, rows: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """Values of filter `f`: those of its column in `rows` (ties), beside others in bounds."""
    if f.compare in ("required", "unless"):
        return st.booleans()
    if f.compare == "named":
        return st.none() | st.sampled_from(f.column.split("|"))
    seen = sorted({v for row in rows if (v := column_value(row, f.column)) is not None}, key=str)
    if f.compare in ("<=", ">=", "="):
        if f.type is int:
            bounded: st.SearchStrategy[Any] = st.integers(int(f.ge or 0), int(f.le or 0))
        else:
            bounded = st.floats(f.ge or 0, f.le, allow_nan=False)
        products = [row["gpu_count"] * row["vram_gb"] for row in rows if row["vram_gb"]]
        ties = products if "*" in f.column else [v for v in seen if isinstance(v, int | float)]
        return st.none() | bounded | st.sampled_from(ties or [0])
    names = [*seen, "nope"]
    if f.compare == "is":
        return st.sampled_from([None, "", *names])
    if f.compare == "in":
        return st.none() | st.frozensets(st.sampled_from(names), max_size=3)
    return st.none() | st.sampled_from(names).flatmap(_any_part)  # contains


def column_value(row: dict[str, Any], column: str) -> Any:
    """`row`'s value of `column`, a derived one (`vendor`) from its GPU's figure."""
    if column in DERIVED:
        return DERIVED[column].get(row["gpu"])
    return row.get(column)


def _any_part(name: str) -> st.SearchStrategy[str]:
    """Any part of `name`, its case swapped."""
    ends = st.tuples(st.integers(0, len(name)), st.integers(0, len(name)))
    return ends.map(lambda at: name[min(at) : max(at)].swapcase())


def filters_over(
    rows: list[dict[str, Any]], figures: tuple[GpuFigure, ...] = FIGURES
) -> st.SearchStrategy[Any]:
    """Any combination of the declared filters (values among those of `rows`, and others),
    a sort and a limit."""
    return st.builds(
        OfferFilters,
        **{f.name: values_of(f, rows) for f in FILTERS},
        sort=st.sampled_from(SORT_FIELDS).flatmap(lambda f: st.sampled_from([f, f"-{f}"])),
        limit=st.none() | st.integers(1, 20),
        gpu_figures=st.just(figures),
    )


def passes(f: Filter, value: Any, row: dict[str, Any]) -> bool:
    """Whether `row` (an offer as answered, with its derived columns) passes filter `f` given
    `value`, as `warehouse.filters` states each comparison; a NULL never passes."""
    if not f.given(value):
        return True
    if f.compare in ("<=", ">=", "="):
        values = [row[c] for c in f.columns]
        if any(v is None for v in values):
            return False
        got = values[0] * values[1] if len(values) > 1 else values[0]
        return {"<=": got <= value, ">=": got >= value, "=": got == value}[f.compare]
    if f.compare == "named":
        return row[value] is True
    got = row[f.column]
    if f.compare in ("required", "unless"):
        return got is True
    if got is None:
        return False
    if f.compare == "is":
        return got == value
    if f.compare == "in":
        return got in value
    return value.lower() in got.lower()  # contains


def in_order(rows: list[dict[str, Any]], sort: str) -> bool:
    """Whether `rows` follow `sort` (unknown values last), then `TIE_BREAK`."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        parts: list[Any] = []
        for name, descending in sort_columns(sort):
            value = row[name]
            parts += [value is None, -value if descending and value is not None else value or 0]
        return tuple(parts)

    return [key(r) for r in rows] == sorted(key(r) for r in rows)


def check_answer(copy: CurrentOffers, wanted: OfferFilters) -> list[dict[str, Any]]:
    """The offers `wanted` selects, checked: each passes every filter given, each left out
    fails one, in `wanted.sort`'s order, `wanted.limit` at most."""
    everything = copy.rows(OfferFilters(include_unavailable=True))
    got = copy.rows(wanted)
    assert all(passes(f, getattr(wanted, f.name), row) for row in got for f in FILTERS)
    assert in_order(got, wanted.sort)
    kept = {row["offer_id"] for row in got}
    passing = [r for r in everything if all(passes(f, getattr(wanted, f.name), r) for f in FILTERS)]
    if wanted.limit is None or len(passing) <= wanted.limit:
        assert kept == {row["offer_id"] for row in passing}
    else:
        assert len(got) == wanted.limit
    return got


def test_the_filters_fields_are_the_declared_filters_then_the_answers_shape():
    names = [field.name for field in fields(OfferFilters)]
    assert names == [*(f.name for f in FILTERS), "sort", "limit", "as_of", "gpu_figures"]
    assert all(f.default == getattr(OfferFilters(), f.name) for f in FILTERS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), size=st.integers(0, 60), seed=st.integers(0, 2**16))
def test_any_declared_filters_keep_the_offers_that_pass_them_in_the_order_asked(data, size, seed):
    pick = random.Random(seed).choice
    rows = [offer(pick, n) for n in range(size)]
    copy = CurrentOffers.load(connection(rows), gpu_figures=FIGURES)
    for _ in range(5):
        check_answer(copy, data.draw(filters_over(rows)))


def excluding(f: Filter, rows: list[dict[str, Any]]) -> Any:
    """A value of `f` that leaves out some of `rows`, and keeps others."""
    if "*" in f.column:
        return 1000.0  # GB over the whole offer: 8 x 141 GB passes, 1 x 24 GB does not
    known = [v for r in rows if (v := column_value(r, f.column)) is not None]
    return {
        "<=": min(known, default=None),
        ">=": max(known, default=None),
        "=": known[0] if known else None,
        "is": known[0] if known else None,
        "in": frozenset(known[:1]),
        "contains": "TEX",
        "required": True,
        "unless": False,
        "named": "eu",
    }[f.compare]


@pytest.mark.parametrize("declared", FILTERS, ids=lambda f: f.name)
def test_each_declared_filter_leaves_out_offers_and_keeps_others(declared):
    pick = random.Random(7).choice
    rows = [offer(pick, n) for n in range(200)]
    copy = CurrentOffers.load(connection(rows), gpu_figures=FIGURES)
    everything = copy.rows(OfferFilters(include_unavailable=True))
    wanted = OfferFilters(
        **{"include_unavailable": True, declared.name: excluding(declared, rows)},
        gpu_figures=FIGURES,
    )
    kept = check_answer(copy, wanted)
    assert 0 < len(kept) < len(everything) == 200
