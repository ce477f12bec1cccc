"""Memory benchmark: the RSS of `serve` through anonymous one-off questions and page views.

Builds a snapshot of `--offers` current offers (bench/market.py, as bench/load.py does), starts
`python -m api serve --no-scheduler` on 127.0.0.1 with `GPUPRICES_MEMORY_BUDGET_MB`, then:
1. `--questions` distinct `/offers` questions, `region=` with `include_unavailable=true` and a
   distinct price cap each (the kind that once kept a whole page per question), 8 at a time;
2. `--views` page views of `/` with filters, all at once (each a different filter set).
The server's RSS is sampled throughout; the peak is printed against the budget.

Traffic goes to 127.0.0.1 only; every loop is bounded and the server is stopped at the end.

    PYTHONPATH=$PWD .venv/bin/python bench/memory.py --offers 40000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from market import _process, build_market, free_port, rss_mb, store_market  # noqa: E402

from warehouse import Warehouse  # noqa: E402

REGIONS = ["e", "us", "eu", "a", "west", "ca", "1", "de", "n", "tx"]
PAGE_FILTERS = [
    {},
    {"include_unavailable": "1"},
    {"view": "all", "sort": "region"},
    {"view": "all", "include_unavailable": "1", "sort": "gpu", "order": "desc"},
    {"gpu": "H100"},
    {"pricing": "spot", "view": "all"},
    {"provider": "runpod", "view": "all", "sort": "reliability"},
    {"gpu": "A100", "include_unavailable": "1"},
]


class Peak:
    """The most resident memory a process reached while sampled (Linux /proc)."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.mb = pid, every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.every_s):
            self.mb = max(self.mb, rss_mb(self.pid))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def fire(base: str, requests: list[tuple[str, dict[str, str]]], at_once: int) -> list[str]:
    """Every request, `at_once` in flight at most; the failures, as lines."""
    assert httpx.URL(base).host == "127.0.0.1", "requests only ever go to 127.0.0.1"
    errors: list[str] = []
    gate = asyncio.Semaphore(at_once)
    limits = httpx.Limits(max_connections=at_once)
    async with httpx.AsyncClient(base_url=base, timeout=300.0, limits=limits) as client:

        async def one(path: str, params: dict[str, str]) -> None:
            async with gate:
                response = await client.get(path, params=params)
                if response.status_code != 200:
                    errors.append(f"{path} {params}: {response.status_code}")

        await asyncio.gather(*(one(path, params) for path, params in requests))
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--offers", type=int, default=40_000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--views", type=int, default=100)
    parser.add_argument("--budget-mb", type=int, default=1024, help="memory_budget_mb")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    questions = [
        ("/offers", {
            "region": REGIONS[n % len(REGIONS)], "include_unavailable": "true",
            "max_price_per_gpu": f"{1 + n / 97:.4f}",
        })
        for n in range(args.questions)
    ]  # fmt: skip
    views = [("/", {**PAGE_FILTERS[n % len(PAGE_FILTERS)]}) for n in range(args.views)]
    with tempfile.TemporaryDirectory() as tmp_name:
        db = Path(tmp_name) / "current.duckdb"
        with Warehouse.open(db) as warehouse:
            market = build_market(args.offers, args.seed)
            store_market(warehouse, market)
        print(f"current offers: {market.size:,}; budget {args.budget_mb} MB")
        port = free_port()
        command = [sys.executable, "-m", "api", "serve", "--no-scheduler", "--host",
                   "127.0.0.1", "--port", str(port), "--db", str(db)]  # fmt: skip
        os.environ["GPUPRICES_MEMORY_BUDGET_MB"] = str(args.budget_mb)
        with _process(command, port, "/healthz", 120.0) as (base, pid):
            print(f"serve started: RSS {rss_mb(pid):.0f} MB")
            with Peak(pid) as peak:
                errors = asyncio.run(fire(base, questions[:1], 1))  # the copy in force made
                print(f"after the first question: RSS {rss_mb(pid):.0f} MB")
                errors += asyncio.run(fire(base, questions[1:], 8))
                print(f"after {len(questions)} one-off questions: RSS {rss_mb(pid):.0f} MB")
                errors += asyncio.run(fire(base, views, len(views)))
                print(f"after {len(views)} concurrent page views: RSS {rss_mb(pid):.0f} MB")
    verdict = "under" if peak.mb <= args.budget_mb else "OVER"
    print(f"peak RSS {peak.mb:.0f} MB, {verdict} the budget of {args.budget_mb} MB")
    print(f"errors: {len(errors)}")
    for error in errors[:5]:
        print(f"  {error}")


if __name__ == "__main__":
    main()
