"""Ingest benchmark: parse + normalize + store of an N-record Vast.ai body, against its JSON floor.

Times each stage of the path a collection run takes (`vastai.parse` into one Arrow table,
`normalize`, `store_run`: one transaction, one bulk insert per table) beside same-run
baselines: a bare `orjson.loads` of the same body (nothing reads it faster into Python), with the
garbage collector on (as any program runs it) and off (the lowest it goes), and a raw DuckDB
insert of the same Arrow rows. Target: ingest at most 1.5x the *lower* floor, at 100,000 records.

    .venv/bin/python bench/ingest.py --offers 100000
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import orjson
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import record_target  # noqa: E402

from pipeline.catalog import get_catalog  # noqa: E402
from pipeline.collection.collect import store_run  # noqa: E402
from pipeline.collection.normalize import normalize  # noqa: E402
from scrapers import vastai  # noqa: E402
from warehouse import RunRow, Warehouse  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vastai_bundles.json"
OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
TARGET_RATIO = 1.5


def synthetic_body(n_offers: int, seed: int) -> bytes:
    """`n_offers` records cloned from the recorded sample with fresh ids and jittered prices."""
    rng = random.Random(seed)
    templates = orjson.loads(SAMPLE.read_bytes())["offers"]
    records = []
    for i in range(n_offers):
        record = dict(rng.choice(templates))
        record["id"] = record["ask_contract_id"] = 10_000_000 + i
        factor = rng.uniform(0.7, 1.3)
        record["dph_base"] = round(record["dph_base"] * factor, 6)
        if record.get("min_bid"):
            record["min_bid"] = round(min(record["min_bid"] * factor, record["dph_base"]), 6)
        records.append(record)
    return orjson.dumps({"offers": records})


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
        result = result if result is not None else None
    return best, result


def loads_without_gc(body: bytes) -> Any:
    gc.disable()
    try:
        return orjson.loads(body)
    finally:
        gc.enable()


def run_row(rows: int) -> RunRow:
    return RunRow(
        "bench", "vastai", OBSERVED_AT, OBSERVED_AT, OBSERVED_AT, "ok", rows, 0, None, "bench"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000, help="records in the body")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--results", type=Path, help="append target results (JSON lines) here")
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, duckdb {duckdb.__version__}, "
        f"pyarrow {pa.__version__}, orjson {orjson.__version__}, msgspec {msgspec.__version__}, "
        f"cpus {os.cpu_count()}"
    )
    body = synthetic_body(args.offers, args.seed)
    catalog = get_catalog()
    print(f"body: {args.offers:,} records, {len(body) / 1e6:.1f} MB")

    stages: dict[str, list[float]] = {
        k: [] for k in ("loads", "loads_nogc", "parse", "normalize", "store", "ingest")
    }
    rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            # Floors and ingest alternate, so that both see the same machine.
            for name, fn in (("loads", orjson.loads), ("loads_nogc", loads_without_gc)):
                start = time.perf_counter()
                fn(body)
                stages[name].append(time.perf_counter() - start)
            with Warehouse.open(Path(tmp) / f"{repeat}.duckdb") as warehouse:
                t0 = time.perf_counter()
                parsed = vastai.parse(body, OBSERVED_AT)
                t1 = time.perf_counter()
                result = normalize(parsed, catalog)
                t2 = time.perf_counter()
                table = result.table
                t3 = t2
                store_run(warehouse, run_row(table.num_rows), result)
                t4 = time.perf_counter()
            rows = table.num_rows
            for name, seconds in (
                ("parse", t1 - t0),
                ("normalize", t2 - t1),
                ("store", t4 - t3),
                ("ingest", t4 - t0),
            ):
                stages[name].append(seconds)
            del parsed, result

        def raw_insert() -> float:
            conn = duckdb.connect(str(Path(tmp) / f"raw{time.perf_counter_ns()}.duckdb"))
            conn.register("batch", table)
            conn.execute("CREATE TABLE t AS SELECT * FROM batch LIMIT 0")
            started = time.perf_counter()
            conn.execute("INSERT INTO t SELECT * FROM batch")
            seconds = time.perf_counter() - started
            conn.close()
            return seconds

        t_raw = min(raw_insert() for _ in range(args.repeats))

    best = {name: min(values) for name, values in stages.items()}
    floor = min(best["loads"], best["loads_nogc"])
    print(f"offers stored per run: {rows:,} ({args.offers:,} records, on-demand + spot)")
    print(f"{'stage (best of ' + str(args.repeats) + ')':<34}{'seconds':>10}{'offers/s':>14}")
    for label, seconds in [
        ("floor: orjson.loads (gc on)", best["loads"]),
        ("floor: orjson.loads (gc off)", best["loads_nogc"]),
        ("parse (vastai.parse)", best["parse"]),
        ("normalize (catalog, places)", best["normalize"]),
        ("store (one transaction)", best["store"]),
        ("baseline: raw duckdb insert", t_raw),
        ("ingest: parse+normalize+store", best["ingest"]),
    ]:
        print(f"{label:<34}{seconds:>10.3f}{rows / seconds:>14,.0f}")
    ratio = best["ingest"] / floor
    print(f"ratio ingest / orjson.loads floor: {ratio:.2f}x (target <= {TARGET_RATIO}x)")
    print(f"ratio store / raw duckdb insert: {best['store'] / t_raw:.2f}x")
    record_target(
        args.results,
        f"ingest {args.offers:,}-record Vast.ai body / orjson.loads",
        f"{ratio:.2f}x ({best['ingest']:.2f} s vs {floor:.2f} s)",
        f"<= {TARGET_RATIO}x",
        ratio <= TARGET_RATIO,
    )


if __name__ == "__main__":
    main()
