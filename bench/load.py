"""Load benchmark: `/offers` over HTTP against a `gpuprices serve` on 127.0.0.1, and its memory.

1. Latency: one client, keep-alive, `GET /offers?gpu=A100-80GB&limit=100` over N current offers of
   all four providers (bench/market.py), p50 / p99.
2. Throughput: 8 concurrent keep-alive clients over a mix of `/offers` queries, a bounded number
   of requests (and a time cap): requests/s, p50 / p99 under load, errors.
3. Unique questions: every request a question never asked before (random GPU, pricing, price
   cap, country, node size, sort and limit), so no page made before can serve it: one client
   (p50 / p99), then 8 keep-alive clients (requests/s), and in the same run the floor: a bare
   ASGI app under the same uvicorn settings (bench/floor.py) answering as many bytes, 8 clients.
   Then issue 47's varied client (always a GPU or family, pricing, a price cap, a country list
   or the EEA, a sort, limit 10-500), and the same questions with limit=10.
   Printed side by side with the ratio (`--unique-only` runs just this part).
4. Memory: the server's RSS over a year of 10-minute history (bench/history.py's warehouse: its
   `build` function, or `--history-db` an already built one) after 1,000 mixed requests.

Traffic goes to 127.0.0.1 only; every loop is bounded and the server is stopped at the end.

    .venv/bin/python bench/load.py --offers 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import duckdb
import fastapi
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from market import build_market, floor_serving, rss_mb, serving, store_market  # noqa: E402
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
UNIQUE_TARGETS = {"p50_ms": 1.0, "p99_ms": 5.0, "rps": 2000.0}
"""Unique questions over 100,000 offers (issue 30); the ratio to the bare-ASGI floor is reported,
not a target."""
UNIQUE_GPUS = [
    "RTX 4090", "RTX 3090", "RTX 5090", "A100-80GB", "A100-40GB", "A100", "H100-80GB", "H100",
    "H100-94GB", "H200-141GB", "L40S", "A40", "RTX A6000", "RTX 6000 Ada", "V100-16GB",
    "RTX A5000", "Quadro RTX 8000", "B200", "GH200-96GB", "A10", None,
]  # fmt: skip
UNIQUE_COUNTRIES = [None, None, "US", "DE", "CA", "SE", "FR,DE", "US,CA", "JP"]
UNIQUE_SORTS = [None, None, None, "price_per_hour", "-reliability", "price_per_pflop_hour"]
VARIED_GPUS = [g for g in UNIQUE_GPUS if g is not None]
"""A GPU id or a family (`A100`, `H100`): issue 47's varied questions always name one."""
VARIED_PLACES = [
    {"country": "US"}, {"country": "DE,FR"}, {"country": "US,CA"}, {"country": "DE,FR,SE,PL"},
    {"country": "JP,TW"}, {"jurisdiction": "eea"},
]  # fmt: skip
VARIED_SORTS = [None, "price_per_hour", "-reliability", "price_per_pflop_hour", "-vram_gb"]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    body_bytes: int = 0
    elapsed: float = 0.0

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0


def unique_questions(n: int, seed: int) -> list[str]:
    """`n` different `/offers` questions, none asked twice (a set keeps them apart)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    while len(seen) < n:
        params = {
            "gpu": rng.choice(UNIQUE_GPUS),
            "pricing": rng.choice([None, "on_demand", "spot"]),
            "max_price_per_gpu": f"{rng.uniform(0.2, 8.0):.3f}",
            "country": rng.choice(UNIQUE_COUNTRIES),
            "min_gpu_count": rng.choice([None, None, None, 2, 4]),
            "sort": rng.choice(UNIQUE_SORTS),
            "limit": rng.choice([10, 20, 50, 100]),
        }
        seen.add("/offers?" + urlencode({k: v for k, v in params.items() if v is not None}))
    questions = sorted(seen)
    rng.shuffle(questions)
    return questions


def varied_questions(n: int, seed: int, limit: int | None = None) -> list[str]:
    """`n` different `/offers` questions of issue 47's varied client: a GPU or a family, pricing,
    a price cap, a country list or the EEA, a sort, and a limit of 10-500 (or `limit`), none
    asked twice. A narrow filter over the cheapest offers: few candidates pass."""
    rng = random.Random(seed)
    seen: set[str] = set()
    while len(seen) < n:
        params = {
            "gpu": rng.choice(VARIED_GPUS),
            "pricing": rng.choice(["on_demand", "spot"]),
            "max_price_per_gpu": f"{rng.uniform(0.3, 6.0):.3f}",
            **rng.choice(VARIED_PLACES),
            "sort": rng.choice(VARIED_SORTS),
            "limit": limit or rng.randint(10, 500),
        }
        seen.add("/offers?" + urlencode({k: v for k, v in params.items() if v is not None}))
    questions = sorted(seen)
    rng.shuffle(questions)
    return questions


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
            tally.body_bytes += length
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
    tally.elapsed = time.perf_counter() - started
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


def unique_phase(db: Path, args: argparse.Namespace, size: int) -> None:
    """Questions never asked before, one client then 8 (bench/load.py's own mix, issue 47's
    varied client, and the same varied questions with limit=10); the bare-ASGI floor in the
    same run."""
    count = args.unique_latency + args.unique_load + 200
    kinds = {
        "unique questions": unique_questions(count, args.seed),
        "varied questions": varied_questions(count, args.seed),
        "varied questions, limit=10": varied_questions(count, args.seed, limit=10),
    }
    measured: dict[str, tuple[Tally, Tally, float]] = {}
    with serving(db) as (base, _pid):
        for kind, questions in kinds.items():
            warm, single_qs, load_qs = (
                questions[:200], questions[200 : 200 + args.unique_latency],
                questions[200 + args.unique_latency :],
            )  # fmt: skip
            drive(base, warm, len(warm), 1, 60.0)  # the copy loaded, code paths warm; then new
            load_before = os.getloadavg()[0]
            single = drive(base, single_qs, len(single_qs), 1, args.cap_s)
            loaded = drive(base, load_qs, len(load_qs), CLIENTS, args.cap_s)
            measured[kind] = (single, loaded, load_before)
    body = measured["unique questions"][1].body_bytes // max(
        1, len(measured["unique questions"][1].latencies)
    )
    with floor_serving(body) as (floor_base, _pid):
        drive(floor_base, ["/"], 500, CLIENTS, 30.0)  # warm-up
        floor = drive(floor_base, ["/"], args.unique_load, CLIENTS, args.cap_s)
    load_after = os.getloadavg()[0]
    for kind, (single, loaded, load_before) in measured.items():
        _unique_report(args, size, kind, single, loaded, floor, (load_before, load_after))


def _unique_report(
    args: argparse.Namespace, size: int, kind: str, single: Tally, loaded: Tally, floor: Tally,
    load: tuple[float, float],
) -> None:  # fmt: skip
    """One kind of unique questions' figures, printed and recorded against the targets."""
    p50, p99 = pct(single.latencies, 0.50), pct(single.latencies, 0.99)
    body = loaded.body_bytes // max(1, len(loaded.latencies))
    share = loaded.rps / floor.rps if floor.rps else 0.0
    print(
        f"{kind}, 1 client, {len(single.latencies)} never asked before: p50 {p50:.2f} "
        f"ms, p99 {p99:.2f} ms, errors {len(single.errors)}"
    )
    print(
        f"{kind}, {CLIENTS} clients, {len(loaded.latencies)} requests: "
        f"{loaded.rps:.0f} req/s (p50 {pct(loaded.latencies, 0.5):.2f} ms, p99 "
        f"{pct(loaded.latencies, 0.99):.2f} ms), errors {len(loaded.errors)}; mean body {body} B"
    )
    print(
        f"  bare-ASGI floor (bench/floor.py, same uvicorn), {CLIENTS} clients: "
        f"{floor.rps:.0f} req/s; {kind} served at {share:.2f}x of it "
        f"(load average {load[0]:.1f} before, {load[1]:.1f} after)"
    )
    for error in (single.errors + loaded.errors)[:5]:
        print(f"  error: {error}")
    record_target(
        args.results, f"/offers {kind} p50 / p99, 1 client, {size:,} offers",
        f"{p50:.2f} / {p99:.2f} ms",
        f"<= {UNIQUE_TARGETS['p50_ms']:.0f} / {UNIQUE_TARGETS['p99_ms']:.0f} ms",
        p50 <= UNIQUE_TARGETS["p50_ms"] and p99 <= UNIQUE_TARGETS["p99_ms"] and not single.errors,
    )  # fmt: skip
    record_target(
        args.results, f"/offers {kind}, {CLIENTS} clients",
        f"{loaded.rps:.0f} req/s, {len(loaded.errors)} errors (floor {floor.rps:.0f} req/s: "
        f"{share:.2f}x)",
        f">= {UNIQUE_TARGETS['rps']:.0f} req/s, 0 errors",
        loaded.rps >= UNIQUE_TARGETS["rps"] and not loaded.errors,
    )  # fmt: skip


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
    parser.add_argument("--unique-latency", type=int, default=500, help="1-client questions")
    parser.add_argument("--unique-load", type=int, default=4000, help="8-client questions")
    parser.add_argument(
        "--unique-only", action="store_true", help="only the unique questions and the floor"
    )
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
        unique_phase(db, args, market.size)
        if args.unique_only:
            return
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
        rps = loaded.rps
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
            f"{uncached.rps:.0f} req/s, "
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
