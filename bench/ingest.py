"""Ingest benchmark: parse + normalize + store of an N-offer Vast.ai body.

Prints offers/second for each stage beside same-run baselines: a bare `orjson.loads` of the body
(nothing can read it faster) and a raw DuckDB insert of the same Arrow rows (the store floor).

    .venv/bin/python bench/ingest.py --offers 20000
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa

from pipeline.catalog import get_catalog
from pipeline.normalize import normalize, offers_to_table
from scrapers import vastai
from warehouse import RunRow, Warehouse
from warehouse.queries import insert_run

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vastai_bundles.json"
OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)


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


def best_of(repeats: int, fn):
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, duckdb {duckdb.__version__}, "
        f"pyarrow {pa.__version__}, orjson {orjson.__version__}, cpus {os.cpu_count()}"
    )
    body = synthetic_body(args.offers, args.seed)
    catalog = get_catalog()
    print(f"body: {args.offers} records, {len(body) / 1e6:.1f} MB")

    t_loads, _ = best_of(args.repeats, lambda: orjson.loads(body))
    t_parse, parsed = best_of(args.repeats, lambda: vastai.parse(body, OBSERVED_AT))
    t_norm, result = best_of(args.repeats, lambda: normalize(parsed, catalog))
    t_table, table = best_of(args.repeats, lambda: offers_to_table(result.offers))
    rows = table.num_rows

    with tempfile.TemporaryDirectory() as tmp:

        def store() -> None:
            with Warehouse.open(Path(tmp) / f"{time.perf_counter_ns()}.duckdb") as wh:
                started = time.perf_counter()
                with wh.transaction() as conn:
                    insert_run(
                        conn,
                        RunRow(
                            "bench",
                            "vastai",
                            OBSERVED_AT,
                            OBSERVED_AT,
                            OBSERVED_AT,
                            "ok",
                            rows,
                            0,
                            None,
                            "bench",
                        ),
                        table,
                    )
                store.seconds = time.perf_counter() - started  # type: ignore[attr-defined]

        def raw_insert() -> None:
            conn = duckdb.connect(str(Path(tmp) / f"raw{time.perf_counter_ns()}.duckdb"))
            conn.register("batch", table)
            conn.execute("CREATE TABLE t AS SELECT * FROM batch LIMIT 0")
            started = time.perf_counter()
            conn.execute("INSERT INTO t SELECT * FROM batch")
            raw_insert.seconds = time.perf_counter() - started  # type: ignore[attr-defined]
            conn.close()

        t_store = min(_timed(store) for _ in range(args.repeats))
        t_raw = min(_timed(raw_insert) for _ in range(args.repeats))

    total = t_parse + t_norm + t_table + t_store
    print(f"offers stored per run: {rows} ({args.offers} records, on-demand + spot)")
    print(f"{'stage':<28}{'seconds':>10}{'offers/s':>14}")
    for name, seconds in [
        ("baseline: orjson.loads", t_loads),
        ("parse (vastai.parse)", t_parse),
        ("normalize (catalog)", t_norm),
        ("arrow batch", t_table),
        ("store (one transaction)", t_store),
        ("baseline: raw duckdb insert", t_raw),
        ("parse+normalize+store", total),
    ]:
        print(f"{name:<28}{seconds:>10.4f}{rows / seconds:>14,.0f}")
    print(f"ratio parse+normalize+store / orjson.loads: {total / t_loads:.1f}x")
    print(f"ratio store / raw duckdb insert: {t_store / t_raw:.2f}x")


def _timed(fn) -> float:
    fn()
    return fn.seconds


if __name__ == "__main__":
    main()
