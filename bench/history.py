"""History benchmark: a year of 10-minute collections of ~5,000 offers, built in DuckDB SQL.

Builds, in a temp dir, the warehouse as ingest would leave it after `--days` of collections every
`--every-min` minutes (collection runs, per-snapshot `price_summaries` for the whole span, raw
`offer_observations` for the `--retention-days` window, the last snapshot of which is what the
`current_offers` view shows),
plus a naive baseline database holding every raw observation of the span. Then prints, as
medians over repeated calls, the latency of the real code paths (year-scale history at 1h and 1d
for one GPU, `/offers` now and `as_of`, over `warehouse.*` and over HTTP) beside the same
questions answered by a full scan of the naive table, and the size of each database on disk.

Prices are synthetic but shaped like the market: per provider and GPU a base USD per GPU-hour,
a log-normal spread across offers, spot at a discount, a year-long downward trend, a daily cycle
and per-snapshot jitter on marketplaces, availability per provider, and 0.5 % failed runs
(gaps). All randomness is `hash(seed, ...)` in SQL, so a seed gives the same data every time.

    .venv/bin/python bench/history.py --offers 5000 --days 365
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import fastapi
import pyarrow as pa
from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.market.offers import read_copy
from pipeline.settings import Settings
from warehouse import OfferFilters, Warehouse
from warehouse.history import (
    HistoryFilters,
    history_sql,
    points_json_sql,
    price_history,
    with_point_json,
)
from warehouse.history_json import price_history_json
from warehouse.rollups import rebuild_rollups
from warehouse.summaries import SUMMARY_AGGREGATES

END = datetime(2026, 3, 1, tzinfo=UTC)
"""The last collection of the synthetic span (fixed, so runs are comparable)."""
SECONDS_PER_MINUTE = 60
MINUTES_PER_DAY = 24 * 60
NAIVE_BYTES_PER_ROW = 4
"""On-disk size of one naive row (measured ~3.3 B compressed), for the disk check."""
REAL_BYTES_PER_RAW_ROW = 25
"""On-disk size of one raw `offer_observations` row (measured ~21 B compressed)."""
DISK_HEADROOM = 1.5
FAILED_PER_MILLE = 5
"""0.5 % of runs fail (no observations, no summaries): history shows gaps there."""
SPOT_DISCOUNT = 0.6

# provider: share of offers, P(available), per-snapshot jitter (fraction), price quoted per,
# P(spot), GPU counts to draw from, regions.
PROVIDERS: dict[str, tuple[float, float, float, str, float, list[int], list[str]]] = {
    "vastai": (0.72, 0.80, 0.05, "instance", 0.5, [1, 1, 1, 2, 2, 4, 8], ["US", "CA", "DE", "FR",
               "SE", "NO", "JP", "TW", "PL", "GB"]),
    "runpod": (0.18, 0.90, 0.02, "gpu", 0.4, [1, 1, 2, 4, 8], ["US-TX-3", "US-GA-1", "EU-RO-1",
               "EU-SE-1", "CA-MTL-1"]),
    "lambda": (0.05, 0.50, 0.0, "gpu", 0.0, [1, 1, 2, 4, 8, 8], ["us-east-1", "us-west-1",
               "us-south-1", "europe-central-1", "asia-northeast-1"]),
    "coreweave": (0.05, 1.0, 0.0, "instance", 0.0, [8], ["US-EAST-04", "US-WEST-01",
                  "US-CENTRAL-02"]),
}  # fmt: skip

# region -> (country, continent, EU, EEA), as pipeline/location.py derives them at ingest.
PLACES: dict[str, tuple[str, str, bool, bool]] = {
    "US": ("US", "North America", False, False), "CA": ("CA", "North America", False, False),
    "DE": ("DE", "Europe", True, True), "FR": ("FR", "Europe", True, True),
    "SE": ("SE", "Europe", True, True), "NO": ("NO", "Europe", False, True),
    "JP": ("JP", "Asia", False, False), "TW": ("TW", "Asia", False, False),
    "PL": ("PL", "Europe", True, True), "GB": ("GB", "Europe", False, False),
    "US-TX-3": ("US", "North America", False, False),
    "US-GA-1": ("US", "North America", False, False), "EU-RO-1": ("RO", "Europe", True, True),
    "EU-SE-1": ("SE", "Europe", True, True), "CA-MTL-1": ("CA", "North America", False, False),
    "us-east-1": ("US", "North America", False, False),
    "us-west-1": ("US", "North America", False, False),
    "us-south-1": ("US", "North America", False, False),
    "europe-central-1": ("DE", "Europe", True, True),
    "asia-northeast-1": ("JP", "Asia", False, False),
    "US-EAST-04": ("US", "North America", False, False),
    "US-WEST-01": ("US", "North America", False, False),
    "US-CENTRAL-02": ("US", "North America", False, False),
}  # fmt: skip

# (provider, gpu id or None for a GPU the catalog does not know, provider spelling, form factor,
#  VRAM GB, share within the provider, median on-demand USD per GPU-hour, log-normal sigma,
#  price change over the year). Medians are of the order of public list prices in early 2026.
SEGMENTS: list[tuple[str, str | None, str, str | None, float, float, float, float, float]] = [
    ("vastai", "RTX 4090", "RTX 4090", None, 24, 0.30, 0.40, 0.25, -0.08),
    ("vastai", "RTX 3090", "RTX 3090", None, 24, 0.15, 0.22, 0.25, -0.08),
    ("vastai", "RTX 5090", "RTX 5090", None, 32, 0.10, 0.65, 0.25, -0.10),
    ("vastai", "RTX A6000", "RTX A6000", None, 48, 0.06, 0.47, 0.20, -0.08),
    ("vastai", "A100-80GB", "A100 SXM4 80GB", "SXM", 80, 0.05, 1.10, 0.20, -0.12),
    ("vastai", "A100-80GB", "A100 PCIE 80GB", "PCIe", 80, 0.03, 0.95, 0.20, -0.12),
    ("vastai", "H100-80GB", "H100 SXM", "SXM", 80, 0.08, 2.00, 0.15, -0.25),
    ("vastai", "H100-80GB", "H100 PCIE", "PCIe", 80, 0.03, 1.70, 0.15, -0.25),
    ("vastai", "L40S", "L40S", "PCIe", 48, 0.05, 0.70, 0.20, -0.10),
    ("vastai", "H200-141GB", "H200", "SXM", 141, 0.03, 2.60, 0.15, -0.20),
    ("vastai", "RTX A5000", "RTX A5000", None, 24, 0.05, 0.22, 0.25, -0.08),
    ("vastai", "RTX 6000 Ada", "RTX 6000Ada", None, 48, 0.04, 0.75, 0.20, -0.08),
    ("vastai", None, "Mystery GPU", None, 24, 0.03, 0.50, 0.30, 0.0),
    ("runpod", "H100-80GB", "H100 80GB HBM3", "SXM", 80, 0.25, 2.69, 0.08, -0.25),
    ("runpod", "H100-80GB", "H100 PCIe", "PCIe", 80, 0.10, 2.39, 0.08, -0.25),
    ("runpod", "A100-80GB", "A100 PCIe", "PCIe", 80, 0.15, 1.64, 0.08, -0.12),
    ("runpod", "A100-80GB", "A100-SXM4-80GB", "SXM", 80, 0.10, 1.74, 0.08, -0.12),
    ("runpod", "RTX 4090", "RTX 4090", None, 24, 0.15, 0.69, 0.08, -0.08),
    ("runpod", "L40S", "L40S", "PCIe", 48, 0.10, 0.86, 0.08, -0.10),
    ("runpod", "H200-141GB", "H200 SXM", "SXM", 141, 0.05, 3.59, 0.08, -0.20),
    ("runpod", "MI300X", "MI300X", None, 192, 0.05, 2.49, 0.08, -0.15),
    ("runpod", "RTX A6000", "RTX A6000", None, 48, 0.05, 0.49, 0.08, -0.08),
    ("lambda", "H100-80GB", "H100 SXM5 80GB", "SXM", 80, 0.35, 2.99, 0.03, -0.25),
    ("lambda", "A100-80GB", "A100 SXM4 80GB", "SXM", 80, 0.20, 1.79, 0.03, -0.12),
    ("lambda", "A100-40GB", "A100 SXM4 40GB", "SXM", 40, 0.15, 1.29, 0.03, -0.12),
    ("lambda", "GH200-96GB", "GH200 96GB", None, 96, 0.10, 1.49, 0.03, -0.10),
    ("lambda", "B200", "B200 180GB SXM6", "SXM", 180, 0.10, 4.99, 0.03, -0.15),
    ("lambda", "A10", "A10 24GB PCIe", "PCIe", 24, 0.10, 0.75, 0.03, -0.05),
    ("coreweave", "H100-80GB", "HGX H100", "SXM", 80, 0.30, 6.16, 0.02, -0.25),
    ("coreweave", "H200-141GB", "HGX H200", "SXM", 141, 0.20, 6.31, 0.02, -0.20),
    ("coreweave", "B200", "HGX B200", "SXM", 180, 0.20, 8.60, 0.02, -0.15),
    ("coreweave", "GB200", "GB200 NVL72", None, 186, 0.10, 10.50, 0.02, -0.10),
    ("coreweave", "A100-80GB", "A100 80GB SXM", "SXM", 80, 0.10, 2.70, 0.02, -0.12),
    ("coreweave", "L40S", "L40S", "PCIe", 48, 0.10, 2.25, 0.02, -0.10),
]


def _lit(v: Any) -> str:
    """A SQL literal for a constant (string, number, NULL or list)."""
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, list):
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    return repr(v)


def _values(rows: list[tuple[Any, ...]]) -> str:
    """A VALUES list for small constant tables (segments, providers)."""
    return ",\n".join("(" + ", ".join(_lit(v) for v in row) + ")" for row in rows)


def build_templates(conn: duckdb.DuckDBPyConnection, n_offers: int, seed: int) -> None:
    """`bench_offers`: the N offers listed in every snapshot, with their fixed attributes."""
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE bench_providers AS
        SELECT * FROM (VALUES {_values([(k, *v) for k, v in PROVIDERS.items()])})
            AS p(provider, share, p_available, jitter, quoted_per, p_spot, counts, regions)
        """
    )
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE bench_places AS
        SELECT * FROM (VALUES {_values([(k, *v) for k, v in PLACES.items()])})
            AS p(region, country, continent, eu, eea)
        """
    )
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE bench_segments AS
        WITH s AS (
            SELECT row_number() OVER () AS seg, *
            FROM (VALUES {_values(SEGMENTS)})
                AS s(provider, gpu, gpu_raw, form_factor, vram_gb, seg_share, usd_per_gpu_hour,
                     sigma, trend)
        ),
        w AS (
            SELECT s.*, p.share * s.seg_share / sum(s.seg_share) OVER (PARTITION BY s.provider)
                   AS weight
            FROM s JOIN bench_providers p USING (provider)
        )
        SELECT *, round({n_offers} * (sum(weight) OVER (ORDER BY seg) - weight)) AS lo,
               round({n_offers} * sum(weight) OVER (ORDER BY seg)) AS hi
        FROM w
        """
    )
    # u(k): a uniform [0, 1) draw per offer and purpose; z: ~N(0, 1) as a sum of four uniforms.
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE bench_offers AS
        WITH o AS (
            SELECT o.range AS o, s.*, p.p_available, p.jitter, p.quoted_per, p.p_spot,
                   p.counts, p.regions,
                   (hash({seed}, o.range, 'u1') % 1000000) / 1e6 AS u1,
                   (hash({seed}, o.range, 'u2') % 1000000) / 1e6 AS u2,
                   (hash({seed}, o.range, 'u3') % 1000000) / 1e6 AS u3,
                   (hash({seed}, o.range, 'u4') % 1000000) / 1e6 AS u4,
                   (hash({seed}, o.range, 'spot') % 1000000) / 1e6 AS u_spot,
                   CAST(hash({seed}, o.range, 'pick') % 1000000007 AS BIGINT) AS h_pick
            FROM range({n_offers}) o
            JOIN bench_segments s ON o.range >= s.lo AND o.range < s.hi
            JOIN bench_providers p USING (provider)
        )
        SELECT o, provider,
               CASE provider WHEN 'runpod' THEN 'pod-' || o WHEN 'lambda' THEN 'gpu_' || o
                    WHEN 'coreweave' THEN 'cw-' || o ELSE CAST(10000000 + o AS VARCHAR) END
                   AS offer_id,
               gpu, gpu_raw, form_factor, vram_gb,
               CASE WHEN u_spot < p_spot THEN 'spot' ELSE 'on_demand' END AS pricing,
               usd_per_gpu_hour * exp(sigma * (u1 + u2 + u3 + u4 - 2) * sqrt(3))
                   * CASE WHEN u_spot < p_spot THEN {SPOT_DISCOUNT} ELSE 1 END AS base_price,
               CAST(counts[1 + h_pick % len(counts)] AS INTEGER) AS gpu_count,
               regions[1 + (h_pick // 7) % len(regions)] AS region,
               quoted_per, p_available, jitter, trend,
               CAST(counts[1 + h_pick % len(counts)] * 8 AS DOUBLE) AS vcpus,
               CAST(counts[1 + h_pick % len(counts)] * 64 AS DOUBLE) AS ram_gb,
               CAST(500 + (h_pick // 11) % 2000 AS DOUBLE) AS disk_gb,
               CASE WHEN provider = 'vastai' THEN (h_pick // 13) % 10 < 7 END AS verified,
               CASE WHEN provider = 'runpod' THEN ['SECURE', 'COMMUNITY'][1 + (h_pick // 17) % 2]
                    END AS tier,
               CASE WHEN provider = 'vastai' THEN 0.9 + ((h_pick // 19) % 1000) / 10000.0
                    END AS reliability
        FROM o
        """
    )
    conn.execute(
        """
        CREATE OR REPLACE TEMP TABLE bench_offers AS
        SELECT o.*, p.* EXCLUDE (region) FROM bench_offers o LEFT JOIN bench_places p USING (region)
        ORDER BY o.o
        """
    )


def build_runs(
    conn: duckdb.DuckDBPyConnection, ticks: int, every_min: int, seed: int
) -> tuple[int, int]:
    """`collection_runs` (one per provider per tick) and `bench_runs` (tick -> run) for joins."""
    start_epoch = int(END.timestamp()) - (ticks - 1) * every_min * SECONDS_PER_MINUTE
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE bench_runs AS
        SELECT t.range AS tick, p.provider,
               to_timestamp({start_epoch} + t.range * {every_min * SECONDS_PER_MINUTE})
                   AS observed_at,
               hash({seed}, p.provider, t.range) % 1000 < {FAILED_PER_MILLE} AS failed
        FROM range({ticks}) t CROSS JOIN bench_providers p
        """
    )
    conn.execute(
        """
        CREATE OR REPLACE TEMP TABLE bench_runs AS
        SELECT r.*, r.provider || '-' || strftime(r.observed_at, '%Y%m%dT%H%M%S') || '-'
                   || printf('%08x', hash(r.provider, r.tick) % 4294967296) AS run_id,
               CASE WHEN r.failed THEN 0 ELSE n.offers END AS offer_count
        FROM bench_runs r
        JOIN (SELECT provider, count(*) AS offers FROM bench_offers GROUP BY provider) n
            USING (provider)
        ORDER BY r.tick, r.provider
        """
    )
    conn.execute(
        """
        INSERT INTO collection_runs
        SELECT run_id, provider, observed_at - INTERVAL 20 SECOND, observed_at + INTERVAL 3 SECOND,
               observed_at, CASE WHEN failed THEN 'failed' ELSE 'ok' END, offer_count, 0,
               CASE WHEN failed THEN 'HTTP 503 Service Unavailable' END, 'bench'
        FROM bench_runs ORDER BY tick, provider
        """
    )
    row = conn.execute("SELECT count(*), count(*) FILTER (WHERE failed) FROM bench_runs").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def observations_sql(
    n_offers: int, ticks: int, per_day: int, lo_tick: int, hi_tick: int, seed: int
) -> str:
    """Every observation of ticks [lo_tick, hi_tick) in collection order, all columns."""
    return f"""
        WITH g AS (
            SELECT i // {n_offers} AS tick, i % {n_offers} AS o,
                   (hash({seed}, i) % 1000000) / 1e6 AS u_price,
                   (hash({seed}, i, 'a') % 1000) / 1e3 AS u_avail
            FROM range({lo_tick * n_offers}, {hi_tick * n_offers}) r(i)
        ),
        priced AS (
            SELECT g.tick, g.o, b.*, r.run_id, r.observed_at, g.u_avail,
                   round(b.base_price * (1 + b.trend * g.tick / {ticks})
                         * (1 + b.jitter * (2 * g.u_price - 1))
                         * (1 + b.jitter * 0.5 * sin(2 * pi() * (g.tick % {per_day}) / {per_day})),
                         4)
                       AS price_per_gpu_hour
            FROM g
            JOIN bench_offers b USING (o)
            JOIN bench_runs r ON r.tick = g.tick AND r.provider = b.provider AND NOT r.failed
        )
        SELECT run_id, provider, offer_id, gpu, gpu_raw, form_factor, gpu_count, vram_gb,
               pricing, round(price_per_gpu_hour * gpu_count, 4) AS price_per_hour,
               price_per_gpu_hour, quoted_per AS price_quoted_per, region,
               u_avail < p_available AS available, observed_at, vcpus, ram_gb, disk_gb,
               verified, tier, reliability, country, continent, eea, eu, o AS offer_no, tick,
               NULL::VARCHAR AS seller
        FROM priced
    """


def create_naive_table(conn: duckdb.DuckDBPyConnection) -> None:
    """The baseline: only the columns its queries read, names as ENUMs (VARCHARs take 3x as long
    to write; ENUMs also make the baseline's scans faster, so its ratios are conservative)."""
    gpus = sorted({s[1] for s in SEGMENTS if s[1] is not None})
    forms = sorted({s[3] for s in SEGMENTS if s[3] is not None})
    for name, values in (
        ("gpu_enum", gpus),
        ("provider_enum", sorted(PROVIDERS)),
        ("form_factor_enum", forms),
    ):
        conn.execute(f"CREATE TYPE naive.main.{name} AS ENUM ({', '.join(map(_lit, values))})")
    conn.execute(
        """
        CREATE TABLE naive.main.raw_observations (
            observed_at TIMESTAMPTZ, provider naive.main.provider_enum, offer_no INTEGER,
            gpu naive.main.gpu_enum, form_factor naive.main.form_factor_enum,
            pricing ENUM('on_demand', 'spot'), price_per_gpu_hour DOUBLE, available BOOLEAN
        )
        """
    )


def build(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    every_min = args.every_min
    per_day = MINUTES_PER_DAY // every_min
    seed = args.seed
    ticks = args.days * per_day
    retention_ticks = min(ticks, args.retention_days * MINUTES_PER_DAY // every_min)
    rows_year = ticks * args.offers
    free = shutil.disk_usage(tmp).free
    need = rows_year * NAIVE_BYTES_PER_ROW + retention_ticks * args.offers * REAL_BYTES_PER_RAW_ROW
    naive_ticks = ticks
    print(f"disk free in {tmp}: {free / 1e9:.1f} GB; estimated need {need / 1e9:.1f} GB")
    if free < need * DISK_HEADROOM:
        spare = free / DISK_HEADROOM - retention_ticks * args.offers * REAL_BYTES_PER_RAW_ROW
        naive_ticks = max(retention_ticks, int(spare // (args.offers * NAIVE_BYTES_PER_ROW)))
        naive_ticks = min(naive_ticks, ticks)
        print(
            f"NOTE: not enough disk for a naive year: naive table scaled down to "
            f"{naive_ticks * every_min / MINUTES_PER_DAY:.0f} days (ratios understate the gap)"
        )

    db_path = tmp / "gpuprices.duckdb"
    naive_path = tmp / "naive.duckdb"
    warehouse = Warehouse.open(db_path)
    steps: list[tuple[str, float]] = []

    def done(name: str, started: float) -> None:
        steps.append((name, time.perf_counter() - started))
        print(f"  build {name:<36}{steps[-1][1]:>8.1f} s", flush=True)

    with warehouse.cursor() as conn:
        t0 = time.perf_counter()
        build_templates(conn, args.offers, args.seed)
        n_runs, n_failed = build_runs(conn, ticks, every_min, args.seed)
        done("runs + offer templates", t0)

        t0 = time.perf_counter()
        # The generator's joins must run in the order written (range -> offer -> run): left to
        # the optimizer, offers x runs becomes a build side as large as the output.
        conn.execute("SET disabled_optimizers = 'join_order'")
        conn.execute(f"ATTACH '{naive_path}' AS naive")
        create_naive_table(conn)
        conn.execute(
            f"""
            INSERT INTO naive.raw_observations
            SELECT observed_at, provider, offer_no, gpu, form_factor, pricing,
                   price_per_gpu_hour, available
            FROM ({observations_sql(args.offers, ticks, per_day, ticks - naive_ticks, ticks, seed)})
            """
        )
        done("naive raw table (full span)", t0)

        # Summaries as ingest builds them (same aggregate as `_SUMMARISE_BATCH`), per run.
        t0 = time.perf_counter()
        source = (
            "(SELECT n.*, b.offer_id, NULL::VARCHAR AS seller FROM naive.raw_observations n"
            " JOIN bench_offers b ON b.o = n.offer_no)"
            if naive_ticks == ticks
            else f"({observations_sql(args.offers, ticks, per_day, 0, ticks, seed)})"
        )
        conn.execute(
            f"""
            INSERT INTO price_summaries BY NAME
            SELECT r.run_id, a.* FROM (
                SELECT provider, observed_at, gpu, form_factor, pricing, {SUMMARY_AGGREGATES}
                FROM {source}
                WHERE gpu IS NOT NULL
                GROUP BY provider, observed_at, gpu, form_factor, pricing
            ) a JOIN bench_runs r USING (provider, observed_at)
            ORDER BY a.observed_at, a.provider, a.gpu, a.pricing
            """
        )
        done("price_summaries (aggregate)", t0)
        conn.execute("DETACH naive")

        t0 = time.perf_counter()
        rebuild_rollups(conn)  # ingest writes these run by run; here in bulk, same rows
        done("index + history rollups (1h, 1d)", t0)

        t0 = time.perf_counter()
        obs = observations_sql(
            args.offers, ticks, per_day, ticks - retention_ticks, ticks, args.seed
        )
        stored = {row[0] for row in conn.execute("DESCRIBE offer_observations").fetchall()}
        made = [row[0] for row in conn.execute(f"DESCRIBE ({obs})").fetchall()]
        columns = [name for name in made if name in stored]  # the rest stay NULL (BY NAME)
        conn.execute(
            f"INSERT INTO offer_observations BY NAME SELECT {', '.join(columns)} FROM ({obs})"
        )
        done("raw offer_observations (retention)", t0)

        t0 = time.perf_counter()
        conn.execute("CHECKPOINT")  # current_offers is a view of the newest snapshots (0017)
        conn.execute("RESET disabled_optimizers")
        done("checkpoint", t0)
        for table in ("runs", "offers", "segments", "providers", "places"):
            conn.execute(f"DROP TABLE bench_{table}")
        counts = {
            table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]
            for table in (
                "collection_runs",
                "price_summaries",
                "index_rollups",
                "history_rollups",
                "history_days",
                "offer_observations",
                "current_offers",
            )
        }
        conn.execute("CHECKPOINT")
    naive = duckdb.connect(str(naive_path))
    naive.execute("SET TimeZone = 'UTC'")
    counts["naive raw_observations"] = int(
        naive.execute("SELECT count(*) FROM raw_observations").fetchone()[0]  # type: ignore[index]
    )
    print(
        f"runs: {n_runs:,} ({n_failed:,} failed), ticks: {ticks:,} every {every_min} min, "
        f"raw kept: {retention_ticks * every_min / MINUTES_PER_DAY:.0f} days"
    )
    for table, n in counts.items():
        print(f"  rows {table:<32}{n:>14,}")
    return {
        "warehouse": warehouse,
        "naive": naive,
        "db_path": db_path,
        "naive_path": naive_path,
        "naive_days": naive_ticks * every_min / MINUTES_PER_DAY,
        "build_seconds": sum(s for _, s in steps),
    }


# -- the naive baseline: the same questions over one table of every raw observation ----------

NAIVE_HISTORY = """
    WITH snapshots AS (
        SELECT provider, observed_at, gpu, form_factor, pricing,
               min(price_per_gpu_hour) AS min_price,
               quantile_cont(price_per_gpu_hour, 0.25) AS p25_price,
               quantile_cont(price_per_gpu_hour, 0.5) AS median_price,
               max(price_per_gpu_hour) AS max_price,
               count(*) AS offer_count, count(*) FILTER (WHERE available) AS available_count,
               min(price_per_gpu_hour) FILTER (WHERE available) AS min_available_price
        FROM raw_observations
        WHERE gpu = ANY(CAST(? AS gpu_enum[])) AND observed_at >= ? AND observed_at < ?
        GROUP BY ALL
    )
    SELECT gpu, form_factor, provider, pricing,
           time_bucket(INTERVAL '{bucket}', observed_at) AS t,
           min(min_price) AS min, min(min_available_price) AS min_available,
           median(p25_price) AS p25, median(median_price) AS median,
           max(max_price) AS max, CAST(round(avg(offer_count)) AS INTEGER) AS offers,
           CAST(round(avg(available_count)) AS INTEGER) AS available, count(*) AS snapshots
    FROM snapshots GROUP BY ALL ORDER BY gpu, form_factor NULLS FIRST, provider, pricing, t
"""
"""Same statistics as `warehouse.history` (per snapshot, then per bucket), from raw rows."""

NAIVE_OFFERS = """
    WITH latest AS (
        SELECT provider, max(observed_at) AS observed_at FROM raw_observations
        WHERE observed_at <= ? GROUP BY provider
    )
    SELECT r.* FROM raw_observations r SEMI JOIN latest USING (provider, observed_at)
    WHERE r.available
    ORDER BY price_per_gpu_hour, provider, offer_no, pricing
"""
"""Each provider's last snapshot at or before a time, found by scanning every observation."""


NAIVE_INDEX = """
    WITH last AS (
        SELECT provider, max(observed_at) AS observed_at,
               time_bucket(INTERVAL '{bucket}', make_timestamp(epoch_us(observed_at))) AS t
        FROM raw_observations WHERE observed_at >= ? AND observed_at < ? GROUP BY ALL
    ),
    contributions AS (
        SELECT l.t, r.provider, min(r.price_per_gpu_hour) FILTER (WHERE r.available) AS v
        FROM raw_observations r JOIN last l USING (provider, observed_at)
        WHERE r.gpu = ANY(CAST(? AS gpu_enum[])) AND r.pricing = 'on_demand'
        GROUP BY ALL
    )
    SELECT make_timestamptz(epoch_us(t)) AS t, median(v) AS value, count(v) AS providers
    FROM contributions
    WHERE v IS NOT NULL GROUP BY t ORDER BY t
"""
"""The index (methodology v1) from raw rows: each provider's last snapshot per bucket."""


@dataclass(frozen=True, slots=True)
class Measured:
    seconds: float
    cpu_seconds: float
    """CPU time of this process (all DuckDB threads): steadier than wall time on a shared box."""
    calls: int
    result: Any


MIN_CALLS = 3


def measure(fn: Callable[[], Any], max_calls: int, budget_s: float, warm_up: bool) -> Measured:
    """Median wall and CPU time over up to `max_calls` calls (at least MIN_CALLS; more while the
    time spent stays under `budget_s`), after one untimed warm-up call if asked."""
    result = fn() if warm_up else None
    wall: list[float] = []
    cpu: list[float] = []
    began = time.perf_counter()
    while len(wall) < max_calls and (
        len(wall) < MIN_CALLS or time.perf_counter() - began < budget_s
    ):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return Measured(statistics.median(wall), statistics.median(cpu), len(wall), result)


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    real: Measured
    naive: Measured | None
    note: str


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


def _file_size(path: Path) -> int:
    """The database file and its WAL, if any."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def run_queries(args: argparse.Namespace, built: dict[str, Any]) -> list[Row]:
    warehouse: Warehouse = built["warehouse"]
    naive: duckdb.DuckDBPyConnection = built["naive"]
    since = END - timedelta(days=args.days)
    until = END + timedelta(seconds=1)
    as_of = END - timedelta(days=args.as_of_days)
    naive_since = max(since, END - timedelta(days=built["naive_days"]))
    gpus = frozenset({args.gpu})
    rows: list[Row] = []

    def real(fn: Callable[[], Any]) -> Measured:
        return measure(fn, args.repeats, args.budget_s, warm_up=True)

    def baseline(sql: str, params: list[Any]) -> Measured:
        return measure(lambda: _rows(naive, sql, params), args.naive_repeats, 0, warm_up=False)

    for interval, bucket in (("1h", "1 hour"), ("1d", "1 day")):
        filters = HistoryFilters(
            scope=OfferFilters(gpus=gpus, include_unavailable=True),
            interval=interval, since=since, until=until,
        )  # fmt: skip
        sql, params = history_sql(filters)
        with warehouse.cursor() as cur:
            got = real(lambda f=filters, c=cur: price_history(c, f))
            got_sql = real(lambda s=sql, p=params, c=cur: c.execute(s, p).to_arrow_table())
        # The naive answer as the same list of dicts; its SQL part is timed on the side.
        naive_sql = NAIVE_HISTORY.format(bucket=bucket)
        naive_params = [sorted(gpus), naive_since, until]
        parts: list[tuple[float, float]] = []

        def naive_history(
            s: str = naive_sql, p: list[Any] = naive_params, parts: list[Any] = parts
        ) -> list[Any]:
            start, start_cpu = time.perf_counter(), time.process_time()
            table = naive.execute(s, p).to_arrow_table()
            parts.append((time.perf_counter() - start, time.process_time() - start_cpu))
            return table.to_pylist()

        base = measure(naive_history, args.naive_repeats, 0, warm_up=False)
        base_sql = Measured(
            statistics.median(w for w, _ in parts),
            statistics.median(c for _, c in parts),
            len(parts),
            None,
        )
        kept = [r for r in got.result if r["t"] >= naive_since]
        same = "same answer" if kept == base.result else "ANSWERS DIFFER"
        label = f"history {interval}, {args.gpu}, {args.days} d"
        rows.append(Row(label, got, base, f"{len(got.result):,} points; {same}"))
        rows.append(Row("  of which SQL -> Arrow", got_sql, base_sql, "without Python objects"))
        # The API path: the same points serialised as JSON by DuckDB (GET /prices/history).
        with warehouse.cursor() as cur:
            got_json = real(lambda f=filters, c=cur: price_history_json(c, f))
        base_json = baseline(points_json_sql(with_point_json(naive_sql)), naive_params)
        rows.append(Row("  as the API's JSON", got_json, base_json, "points built by DuckDB"))

    for label, at in (("offers now", until), (f"offers as_of -{args.as_of_days} d", as_of)):
        filters = OfferFilters(as_of=None if at is until else at)
        got = real(lambda f=filters: read_copy(warehouse, f).rows(f))  # a copy read, then asked
        base = baseline(NAIVE_OFFERS, [at])
        note = f"{len(got.result):,} offers"
        if len(base.result) != len(got.result):
            note += f"; NAIVE HAS {len(base.result):,}"
        rows.append(Row(f"{label} (read_copy + rows)", got, base, note))

    iso = "%Y-%m-%dT%H:%M:%SZ"
    span = {"since": since.strftime(iso), "until": until.strftime(iso)}
    index_base: dict[str, Measured] = {}
    for interval, bucket in (("1h", "1 hour"), ("1d", "1 day")):
        naive_params = [naive_since, until, sorted(gpus)]
        index_base[interval] = baseline(NAIVE_INDEX.format(bucket=bucket), naive_params)
    market_since = END - timedelta(days=30)
    index_base["market"] = measure(
        lambda: [
            _rows(naive, NAIVE_INDEX.format(bucket=b), [market_since, until, sorted(gpus)])
            for b in ("1 hour", "1 day")
        ],
        args.naive_repeats, 0, warm_up=False,
    )  # fmt: skip
    http: list[tuple[str, str, dict[str, str]]] = [
        ("GET /offers", "/offers", {}),
        ("GET /offers?limit=50", "/offers", {"limit": "50"}),
        (f"GET /offers?as_of=-{args.as_of_days} d", "/offers", {"as_of": as_of.strftime(iso)}),
        (f"GET /prices/history 1h, {args.days} d", "/prices/history",
         {"gpu": args.gpu, "interval": "1h", **span}),
        (f"GET /prices/history 1h, {args.days} d, gzip", "/prices/history",
         {"gpu": args.gpu, "interval": "1h", **span}),
        (f"GET /prices/history 1d, {args.days} d", "/prices/history",
         {"gpu": args.gpu, "interval": "1d", **span}),
        (f"GET /index 1d, {args.days} d", "/index",
         {"gpu": args.gpu, "pricing": "on_demand", "interval": "1d", **span}),
        (f"GET /index 1h, {args.days} d", "/index",
         {"gpu": args.gpu, "pricing": "on_demand", "interval": "1h", **span}),
        ("GET /market 30 d", "/market", {"gpu": args.gpu, "days": "30"}),
    ]  # fmt: skip
    naive_for = {"/index1d": "1d", "/index1h": "1h", "/market": "market"}
    app = create_app(Settings(scheduler=False), warehouse, clock=lambda: END)
    with TestClient(app) as client:
        for label, url, params in http:
            # Timed: the request until its whole body is received. The client's parse of the
            # JSON is its own cost (a year of hourly points is 13 MB: ~0.2 s in `json.loads`).
            # Asked uncompressed (as bench/load.py's client asks), but for the row marked gzip:
            # compressing a large answer, and the client's inflating it, is its own cost.
            encoding = "gzip" if label.endswith("gzip") else "identity"

            def call(
                url: str = url, params: dict[str, str] = params, encoding: str = encoding
            ) -> Any:
                response = client.get(url, params=params, headers={"Accept-Encoding": encoding})
                response.raise_for_status()
                return response

            got = real(call)
            body = got.result.json()
            if "count" in body:
                size = f"{body['count']:,} offers"
            elif url == "/market":
                size = f"{body['history_days']} days, now {body['now']:.3f}"
            elif url == "/index":
                points = body["series"][0]["points"]
                base_rows = index_base[params["interval"]].result
                kept = [p for p in points if p["t"] >= naive_since.strftime(iso)]
                same = len(kept) == len(base_rows) and all(
                    abs(p["value"] - b[1]) < 1e-9 for p, b in zip(kept, base_rows, strict=False)
                )
                size = f"{len(points):,} points; {'same answer' if same else 'ANSWERS DIFFER'}"
            else:
                size = f"{len(body['series'])} series, {len(got.result.content) / 1e6:.1f} MB"
            key = naive_for.get(url + params.get("interval", ""))
            rows.append(Row(label, got, index_base[key] if key else None, size))

        # The first question of a time: each call 10 minutes earlier than the last, so that no
        # copy of its snapshots is held yet (the row above asks one time again and again).
        earlier = iter(range(1, 1_000_000))

        def new_time() -> Any:
            at = as_of - timedelta(minutes=args.every_min * next(earlier))
            response = client.get(
                "/offers",
                params={"as_of": at.strftime(iso)},
                headers={"Accept-Encoding": "identity"},
            )
            response.raise_for_status()
            return response

        got = measure(new_time, args.repeats, args.budget_s, warm_up=False)
        label = f"GET /offers?as_of=-{args.as_of_days} d, new"
        note = f"{got.result.json()['count']:,} offers; a new time each call"
        rows.append(Row(label, got, None, note))

    # Summaries have no region: a region filter rebuilds them from the raw observations, so it
    # reaches back over the retention window only.
    filters = HistoryFilters(
        scope=OfferFilters(gpus=gpus, region="US", include_unavailable=True),
        interval="1d", since=END - timedelta(days=args.retention_days), until=until,
    )  # fmt: skip
    with warehouse.cursor() as cur:
        got = real(lambda: price_history(cur, filters))
    label = f"history 1d region=US, {args.retention_days} d (raw)"
    rows.append(Row(label, got, None, f"{len(got.result):,} points"))
    return rows


def print_rows(rows: list[Row]) -> None:
    print(
        f"{'':<38}{'real layout':>22}{'naive scan':>22}{'ratio':>15}\n"
        f"{'query':<38}{'ms':>9}{'cpu ms':>9}{'n':>4}{'ms':>9}{'cpu ms':>9}{'n':>4}"
        f"{'wall':>7}{'cpu':>8}  note"
    )
    for row in rows:
        real = row.real
        line = f"{row.label:<38}{real.seconds * 1e3:>9.1f}{real.cpu_seconds * 1e3:>9.1f}"
        line += f"{real.calls:>4}"
        if row.naive is not None:
            naive = row.naive
            line += f"{naive.seconds * 1e3:>9.0f}{naive.cpu_seconds * 1e3:>9.0f}{naive.calls:>4}"
            line += f"{naive.seconds / real.seconds:>6.1f}x"
            line += f"{naive.cpu_seconds / real.cpu_seconds:>7.1f}x"
        else:
            line += f"{'':>37}"
        print(f"{line}  {row.note}")


def summaries_bytes(db_path: Path) -> int:
    """Size of `collection_runs` + `price_summaries` alone, copied into a database of their own:
    what the layout keeps forever once raw observations are pruned."""
    target = db_path.with_name("summaries.duckdb")
    conn = duckdb.connect(str(target))
    conn.execute(f"ATTACH '{db_path}' AS src (READ_ONLY)")
    for table in ("collection_runs", "price_summaries"):
        conn.execute(f"CREATE TABLE {table} AS FROM src.{table}")
    conn.execute("DETACH src")
    conn.execute("CHECKPOINT")
    conn.close()
    return _file_size(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=5000, help="offers per snapshot")
    parser.add_argument("--days", type=int, default=365, help="span of collections")
    parser.add_argument("--every-min", type=int, default=10, help="minutes between collections")
    parser.add_argument("--retention-days", type=int, default=90, help="raw observations kept")
    parser.add_argument("--as-of-days", type=int, default=30, help="how far back as_of asks")
    parser.add_argument("--gpu", default="A100-80GB", help="the GPU whose history is asked")
    parser.add_argument("--repeats", type=int, default=20, help="most timed calls per query")
    parser.add_argument("--budget-s", type=float, default=5.0, help="stop repeating past this")
    parser.add_argument("--naive-repeats", type=int, default=3, help="timed naive calls")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--dir", type=Path, default=None, help="where to build (default: temp)")
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, duckdb {duckdb.__version__}, "
        f"pyarrow {pa.__version__}, fastapi {fastapi.__version__}, cpus {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    ticks = args.days * MINUTES_PER_DAY // args.every_min
    print(
        f"{args.days} d every {args.every_min} min x {args.offers:,} offers = "
        f"{ticks * args.offers:,} observations; seed {args.seed}"
    )
    started = time.perf_counter()
    base = args.dir or Path(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(dir=base, prefix="bench-history-") as tmp:
        built = build(args, Path(tmp))
        rows = run_queries(args, built)
        built["warehouse"].close()
        built["naive"].close()
        print()
        print(
            f"medians: real layout over n calls after one warm-up (up to {args.repeats}, while "
            f"under {args.budget_s:.0f} s), naive over n cold-to-warm calls; cpu = this "
            f"process's CPU time (all threads)"
        )
        print_rows(rows)
        print()
        db_bytes = _file_size(built["db_path"])
        print(
            f"database on disk: {db_bytes / 1e9:.2f} GB (real layout: {args.days} d of "
            f"summaries, {args.retention_days} d of raw observations)"
        )
        print(f"summaries alone:  {summaries_bytes(built['db_path']) / 1e6:.0f} MB (runs + "
              f"price_summaries, {args.days} d: what stays once raw is pruned)")  # fmt: skip
        print(
            f"naive on disk:    {_file_size(built['naive_path']) / 1e9:.2f} GB "
            f"({built['naive_days']:.0f} d of raw observations, 8 columns)"
        )
    print(
        f"total {time.perf_counter() - started:.0f} s (build {built['build_seconds']:.0f} s), "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
