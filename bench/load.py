"""Load benchmark: `/offers` over HTTP against a `gpuprices serve` on 127.0.0.1, and its memory.

1. Latency: one client, keep-alive, `GET /offers?gpu=A100-80GB&limit=100` over N current offers of
   all four providers (bench/market.py), p50 / p99.
2. Throughput: 8 concurrent keep-alive clients over a mix of `/offers` queries, a bounded number
   of requests (and a time cap): requests/s, p50 / p99 under load, errors.
3. Memory: the server's RSS over a year of 10-minute history (bench/history.py's warehouse: its
   `build` function, or `--history-db` an already built one) after 1,000 mixed requests.

Traffic goes to 127.0.0.1 only; every loop is bounded and the server is stopped at the end.

    .venv/bin/python bench/load.py --offers 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import fastapi
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from market import build_market, rss_mb, serving, store_market  # noqa: E402
from report import record_target  # noqa: E402

from warehouse import Warehouse  # noqa: E402

HEADLINE = "/offers?gpu=A100-80GB&limit=100"
OFFER_QUERIES = [
    HEADLINE,
    "/offers?gpu=H100-80GB&limit=100",
    "/offers?gpu=RTX%204090&limit=100",
    "/offers?gpu=A100&pricing=spot&limit=100",
    "/offers?gpu=L40S&country=DE,FR,SE&limit=100",
    "/offers?provider=runpod&limit=100&sort=price_per_hour",
    "/offers?jurisdiction=eea&max_price_per_gpu=2&limit=100",
    "/offers?gpu=H200-141GB&limit=100",
]
MIXED = [
    *OFFER_QUERIES,
    "/providers",
    "/gpus",
    "/healthz",
    "/prices/history?gpu=A100-80GB&interval=1d",
    "/prices/history?gpu=H100-80GB&interval=1h",
    "/offers?gpu=A100-80GB&as_of={yesterday}&limit=50",
    "/regions",
    "/metrics",
]
"""What a dashboard asks: current offers, provider health, a year of daily history, as_of (a
day ago: inside the retention window, so each provider's last snapshot then, read from raw
observations)."""
CLIENTS = 8
TARGETS = {"p50_ms": 10.0, "p99_ms": 30.0, "rps": 500.0, "rss_mb": 300.0}


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def _client(
    host: str, port: int, paths: Sequence[str], todo: list[int], tally: Tally, deadline: float
) -> None:
    """One keep-alive HTTP/1.1 connection; takes request numbers from `todo` until empty."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while todo and time.perf_counter() < deadline:
            n = todo.pop()
            path = paths[n % len(paths)]
            request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
            started = time.perf_counter()
            writer.write(request)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            tally.latencies.append(time.perf_counter() - started)
            status = status_line.split()[1] if len(status_line.split()) > 1 else b"?"
            if status != b"200":
                tally.errors.append(f"{path}: {status_line.decode().strip()}")
    except (OSError, asyncio.IncompleteReadError) as exc:
        tally.errors.append(f"connection: {type(exc).__name__}: {exc}")
    finally:
        writer.close()


def drive(base: str, paths: Sequence[str], requests: int, clients: int, cap_s: float) -> Tally:
    """`requests` requests over `clients` connections (or until `cap_s`), in one event loop."""
    url = urlsplit(base)
    assert url.hostname == "127.0.0.1", "load only ever goes to 127.0.0.1"
    tally = Tally()
    todo = list(range(requests))[::-1]

    async def run() -> None:
        deadline = time.perf_counter() + cap_s
        await asyncio.gather(
            *(_client(url.hostname, url.port or 80, paths, todo, tally, deadline)
              for _ in range(clients))
        )  # fmt: skip

    started = time.perf_counter()
    asyncio.run(run())
    tally.elapsed = time.perf_counter() - started  # type: ignore[attr-defined]
    return tally


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def history_warehouse(args: argparse.Namespace, tmp: Path) -> tuple[Path, str]:
    """A year of history at the 10-minute cadence: given, or built by bench/history.py."""
    if args.history_db is not None:
        return args.history_db, f"bench/history.py warehouse at {args.history_db}"
    import history  # bench/history.py: the history issue's synthetic year

    spec = argparse.Namespace(
        offers=args.history_offers, days=args.history_days, every_min=10, retention_days=90,
        seed=args.seed, dir=tmp,
    )  # fmt: skip
    built = history.build(spec, tmp)
    built["warehouse"].close()
    built["naive"].close()
    return built["db_path"], (
        f"bench/history.py build(): {args.history_days} d x {args.history_offers} offers / 10 min"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000, help="current offers served")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--latency-requests", type=int, default=500)
    parser.add_argument("--load-requests", type=int, default=6000)
    parser.add_argument("--cap-s", type=float, default=60.0, help="time cap of the load phase")
    parser.add_argument("--mixed-requests", type=int, default=1000)
    parser.add_argument("--history-db", type=Path, help="an already built bench/history.py db")
    parser.add_argument(
        "--history-offers", type=int, default=5000, help="offers per snapshot of a built year"
    )
    parser.add_argument("--history-days", type=int, default=365)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--results", type=Path, help="append target results (JSON lines) here")
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, fastapi {fastapi.__version__}, "
        f"uvicorn {uvicorn.__version__}, duckdb {duckdb.__version__}, cpus {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        db = tmp / "current.duckdb"
        with Warehouse.open(db) as warehouse:
            market = build_market(args.offers, args.seed)
            store_market(warehouse, market)
        print(f"current offers: {market.size:,} over vastai, runpod, lambda, coreweave")
        with serving(db) as (base, _pid):
            drive(base, OFFER_QUERIES, 200, 1, 30.0)  # warm-up: every query once or more
            single = drive(base, [HEADLINE], args.latency_requests, 1, args.cap_s)
            loaded = drive(base, OFFER_QUERIES, args.load_requests, CLIENTS, args.cap_s)
            # Every request a new query (a price cap no offer reaches): nothing serialized before
            # serves it, each answer is computed from the in-memory copy.
            distinct = [
                f"{HEADLINE}&max_price_per_gpu={1000 + n / 1000:.3f}"
                for n in range(args.load_requests // 2)
            ]
            uncached = drive(base, distinct, len(distinct), CLIENTS, args.cap_s)
        p50, p99 = pct(single.latencies, 0.50), pct(single.latencies, 0.99)
        rps = len(loaded.latencies) / loaded.elapsed  # type: ignore[attr-defined]
        print(
            f"latency, 1 client, {len(single.latencies)} x {HEADLINE}: "
            f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
            f"mean {statistics.fmean(single.latencies) * 1e3:.2f} ms, errors {len(single.errors)}"
        )
        print(
            f"throughput, {CLIENTS} clients, {len(loaded.latencies)} requests over "
            f"{len(OFFER_QUERIES)} /offers queries: {rps:.0f} req/s, p50 "
            f"{pct(loaded.latencies, 0.5):.2f} ms, p99 {pct(loaded.latencies, 0.99):.2f} ms, "
            f"errors {len(loaded.errors)}"
        )
        print(
            f"throughput, {CLIENTS} clients, {len(uncached.latencies)} distinct queries (no "
            f"serialized page reused): "
            f"{len(uncached.latencies) / uncached.elapsed:.0f} req/s, "  # type: ignore[attr-defined]
            f"p50 {pct(uncached.latencies, 0.5):.2f} ms, p99 {pct(uncached.latencies, 0.99):.2f} "
            f"ms, errors {len(uncached.errors)}"
        )
        for error in (single.errors + loaded.errors + uncached.errors)[:5]:
            print(f"  error: {error}")
        record_target(
            args.results, f"/offers p50, 1 client, {market.size:,} offers",
            f"{p50:.2f} ms", f"<= {TARGETS['p50_ms']:.0f} ms", p50 <= TARGETS["p50_ms"],
        )  # fmt: skip
        record_target(
            args.results, f"/offers p99, 1 client, {market.size:,} offers",
            f"{p99:.2f} ms", f"<= {TARGETS['p99_ms']:.0f} ms", p99 <= TARGETS["p99_ms"],
        )  # fmt: skip
        complete = len(loaded.latencies) == args.load_requests
        record_target(
            args.results, f"/offers throughput, {CLIENTS} clients, no errors",
            f"{rps:.0f} req/s, {len(loaded.errors)} errors"
            + ("" if complete else f" ({len(loaded.latencies)} done in the cap)"),
            f">= {TARGETS['rps']:.0f} req/s, 0 errors",
            rps >= TARGETS["rps"] and not loaded.errors and not single.errors,
        )  # fmt: skip

        if args.skip_memory:
            return
        history_db, source = history_warehouse(args, tmp)
        yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        paths = [path.format(yesterday=yesterday) for path in MIXED]
        with serving(history_db) as (base, pid):
            rss_start = rss_mb(pid)
            mixed = drive(base, paths, args.mixed_requests, CLIENTS, 300.0)
            rss = rss_mb(pid)
        print(
            f"memory over {source}: RSS {rss_start:.0f} MB at start, {rss:.0f} MB after "
            f"{len(mixed.latencies)} mixed requests ({len(MIXED)} kinds, {CLIENTS} clients, "
            f"p50 {pct(mixed.latencies, 0.5):.1f} ms, errors {len(mixed.errors)})"
        )
        for error in mixed.errors[:5]:
            print(f"  error: {error}")
        record_target(
            args.results, "gpuprices serve RSS, a year of history, 1,000 mixed requests",
            f"{rss:.0f} MB", f"< {TARGETS['rss_mb']:.0f} MB",
            rss < TARGETS["rss_mb"] and len(mixed.latencies) >= args.mixed_requests,
        )  # fmt: skip


if __name__ == "__main__":
    main()
