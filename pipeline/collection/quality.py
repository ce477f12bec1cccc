"""Every provider run's quality, measured and judged against the provider's own past runs.

Measured per run: the share of offers resolved to a catalog GPU, each unknown GPU spelling with
its offer count and one example offer, rejects by reason, and the answer's shape (the field
paths of a JSON answer) against the provider's previous good run. Price outliers are flagged by
the warehouse in the run's transaction (`warehouse.quality.flag_price_outliers`).

A run is *degraded* when (thresholds in `QualityBounds`, set through `Settings`):
- the provider failed `failed_runs` runs in a row (this one included);
- its resolved share is `share_drop_points` points or more below its mean share over its good
  runs (runs that stored offers) of the previous 24 hours;
- fields of its answer appeared or went missing against its previous good run.

A run that failed because the provider's required key is not set is *not configured*: it never
counts as a failure nor degrades the provider. Drift is judged on the run it appears in: the next
run with the same shape or share is clean again (and ends the alert episode).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.settings import QualityBounds
from scrapers.models import ParseResult
from warehouse import Warehouse
from warehouse.quality import QualityRow, quality_runs

__all__ = [
    "QualityBounds",
    "RunQuality",
    "answer_shape",
    "assess",
]

State = Literal["ok", "failed", "not_configured"]
SHARE_WINDOW = timedelta(hours=24)
"""Good runs a resolved share is compared with: those of the previous 24 hours."""
MAX_LIST_ITEMS = 200
"""Elements of each list walked for the shape (a 20,000-offer answer repeats its fields)."""
MAX_DEPTH = 8
HISTORY_RUNS = 200
"""Newest runs read to judge a new one (24 h of runs every few minutes fit)."""
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A field name; a key that is not one (`fr-par-2`, `H100-1-80G`, a GPU id) is data."""


@dataclass(frozen=True, slots=True)
class RunQuality:
    row: QualityRow
    unknowns: list[tuple[str, int, str]]
    reasons: list[tuple[str, int]]


def answer_shape(payload: bytes) -> frozenset[str] | None:
    """The field paths of a JSON answer (`offers[].gpu_name`); None for any other body.

    An object whose keys are not all field names (types keyed by `H100-1-80G`, zones by
    `fr-par-2`) is a map: its keys read as `*`, so new types are not new fields."""
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    paths: set[str] = set()
    _walk(body, "", paths, 0)
    return frozenset(paths)


def _walk(value: Any, path: str, paths: set[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        is_map = not all(_IDENTIFIER.match(str(k)) for k in value)
        for key, child in list(value.items())[:MAX_LIST_ITEMS] if is_map else value.items():
            child_path = f"{path}.{'*' if is_map else key}".lstrip(".")
            paths.add(child_path)
            _walk(child, child_path, paths, depth + 1)
    elif isinstance(value, list):
        for child in value[:MAX_LIST_ITEMS]:
            _walk(child, f"{path}[]", paths, depth + 1)


def _unknowns(table: pa.Table) -> list[tuple[str, int, str]]:
    """(spelling, offers, one offer_id) of each GPU name that resolved to nothing."""
    unknown = table.filter(pc.is_null(table["gpu"])).select(["gpu_raw", "offer_id"])
    if unknown.num_rows == 0:
        return []
    grouped = unknown.group_by("gpu_raw", use_threads=False).aggregate(
        [("offer_id", "count"), ("offer_id", "min")]
    )
    return sorted(
        zip(
            grouped["gpu_raw"].to_pylist(),
            grouped["offer_id_count"].to_pylist(),
            grouped["offer_id_min"].to_pylist(),
            strict=True,
        ),
        key=lambda u: (-u[1], u[0]),
    )


def _shape_change(
    shape: frozenset[str] | None, previous: str | None
) -> tuple[list[str], list[str]] | None:
    if shape is None or previous is None:
        return None
    before = frozenset(orjson.loads(previous))
    return sorted(shape - before), sorted(before - shape)


def _failures_in_a_row(history: Iterable[dict[str, Any]]) -> int:
    count = 0
    for run in history:
        if run["state"] == "not_configured":
            continue
        if run["state"] != "failed":
            break
        count += 1
    return count


def assess(
    warehouse: Warehouse,
    *,
    run_id: str,
    provider: str,
    observed_at: datetime,
    state: State,
    result: ParseResult | None,
    shape: frozenset[str] | None,
    bounds: QualityBounds,
) -> RunQuality:
    """This run's quality, judged against the provider's stored runs (read, not written)."""
    with warehouse.cursor() as cur:
        history = quality_runs(cur, provider, None, HISTORY_RUNS)
    table = result.table if result is not None else None
    offers = table.num_rows if table is not None else 0
    unknowns = _unknowns(table) if table is not None else []
    resolved = offers - sum(n for _, n, _ in unknowns)
    rejects = result.rejects if result is not None else []
    reasons: list[str] = []
    added = missing = None
    good = [r for r in history if r["state"] == "ok"]
    if state == "failed":
        in_a_row = 1 + _failures_in_a_row(history)
        if in_a_row >= bounds.failed_runs:
            reasons.append(f"failed {in_a_row} runs in a row")
    elif state == "ok":
        window = [r for r in good if observed_at - SHARE_WINDOW <= r["observed_at"] < observed_at]
        shares = [r["resolved_count"] / r["offer_count"] for r in window if r["offer_count"]]
        share = resolved / offers if offers else 0.0
        if shares:
            baseline = sum(shares) / len(shares)
            drop = (baseline - share) * 100
            if drop >= bounds.share_drop_points:
                reasons.append(
                    f"resolved share {share:.0%} is {drop:.0f} points below its {baseline:.0%} "
                    "over the previous 24 h"
                )
    previous = next((r["shape_json"] for r in good if r["shape_json"] is not None), None)
    change = _shape_change(shape, previous)
    if change is not None:
        added, missing = change
    if added or missing:
        assert added is not None and missing is not None
        reasons.append(
            f"answer's shape changed: {len(added)} fields appeared, {len(missing)} missing"
        )
    row = QualityRow(
        run_id=run_id,
        provider=provider,
        observed_at=observed_at,
        state=state,
        offer_count=offers,
        resolved_count=resolved,
        reject_count=len(rejects),
        unknown_names=len(unknowns),
        shape_json=orjson.dumps(sorted(shape)).decode() if shape is not None else None,
        fields_added=orjson.dumps(added).decode() if added is not None else None,
        fields_missing=orjson.dumps(missing).decode() if missing is not None else None,
        degraded=bool(reasons),
        reasons=orjson.dumps(reasons).decode() if reasons else None,
    )
    counted = Counter(r.reason for r in rejects)
    return RunQuality(row, unknowns, sorted(counted.items(), key=lambda rc: (-rc[1], rc[0])))
