"""Where a never-asked `/offers` question spends its time, stage by stage, in one process.

Over N current offers (bench/market.py), the questions `bench/load.py` asks in its unique mode
(none twice; `--kind varied`: issue 47's varied client, `varied10`: the same with limit=10) are
answered the way the API's common path answers them (`api.rest.routes.offers`),
each stage timed on its own with `time.perf_counter`:

- read: the query string into the route's query model (`OffersParams`), as FastAPI reads it:
  through a small app called in this process (its routing and ASGI call included);
- call: the same call to a route of that app that takes no parameter (read - call: what the
  query model costs; not part of the route total, which read includes);
- freshness: each provider's freshness, as the route asks for it;
- scope: the model resolved into warehouse filters (GPU names to ids, places checked);
- selection: the positions of the page's offers in the in-memory copy;
- answer: the selection again with the stale marks and the providers reported (what the route
  calls: `OfferServer.answer`);
- page: the JSON page joined from the offers' JSON written once per copy (`api.rest.offers_json`).

`--duckdb` also times the alternative issue 47 asked to measure: the same questions as SQL
(`scope_conditions`, `ORDER BY ... LIMIT`) over the same copy loaded into an in-memory DuckDB
table, beside the engine's selection.

Twice: back to back ("warm"), and with 64 MB read between two questions ("cold": roughly what
uvicorn's own work between two requests leaves of the caches). A served request pays about the
cold figures on top of what uvicorn spends on any request (see bench/floor.py).

    .venv/bin/python bench/offers_stages.py --offers 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fastapi import FastAPI, Response  # noqa: E402
from load import unique_questions, varied_questions  # noqa: E402
from market import build_market, store_market  # noqa: E402
from starlette.datastructures import State  # noqa: E402
from starlette.types import Message  # noqa: E402

from api.rest.offers_json import prepare  # noqa: E402
from api.rest.routes.offers import (  # noqa: E402
    OffersParams,
    OffersParamsDep,
    _page,
    _providers_json,
)
from pipeline.base import utc_now  # noqa: E402
from pipeline.market.serving import OfferServer  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from warehouse import Warehouse  # noqa: E402
from warehouse.offers import order_by, scope_conditions  # noqa: E402

STAGES = ("read", "call", "freshness", "scope", "selection", "answer", "page")


def query_reader() -> tuple[Callable[[bytes], OffersParams], Callable[[bytes], None]]:
    """A query string read as `GET /offers` reads it (an app whose route takes the route's
    query model, FastAPI's query parameter model, called in this process), and the same call
    to a route without parameters."""
    app = FastAPI()
    read: list[OffersParams] = []

    @app.get("/offers")
    async def offers(query: OffersParamsDep) -> Response:
        read.append(query)
        return Response(status_code=204)

    @app.get("/call")
    async def call() -> Response:
        return Response(status_code=204)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] != 204:
            raise ValueError(f"the query model refused the question: {message['status']}")

    loop = asyncio.new_event_loop()

    def asked(path: str, raw: bytes) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": raw,
            "headers": [],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
        }
        loop.run_until_complete(app(scope, receive, send))

    def parse(raw: bytes) -> OffersParams:
        asked("/offers", raw)
        return read.pop()

    return parse, lambda raw: asked("/call", raw)


def time_stages(
    server: OfferServer,
    raws: list[bytes],
    between: Callable[[], Any],
    parse: Callable[[bytes], OffersParams],
    call: Callable[[bytes], None],
) -> dict[str, list[float]]:
    """Each stage's time per question, in µs (as the route: the runs are read once a second,
    in the freshness stage; the answer is made from the copy in force)."""
    spent: dict[str, list[float]] = defaultdict(list)
    clock = time.perf_counter
    state = State()  # the app's state: the providers' JSON kept there
    for raw in raws:
        between()
        t0 = clock()
        query = parse(raw)
        query = query.model_copy(update={"limit": query.limit or 10_000})
        t1 = clock()
        call(raw)
        t1b = clock()
        now = utc_now()
        freshness = server.freshness(now)
        t2 = clock()
        held = server._fresh()  # the copy in force (not timed)
        t2b = clock()
        filters = query.filters()
        t3 = clock()
        if held is None or held.copy is None:  # the runs are due for a read: the next question
            continue
        held.copy.select(filters)
        t4 = clock()
        answer = server.answer(query, now, freshness, ready_only=True)
        t5 = clock()
        if answer is None:  # a read fell due since the freshness stage: not timed
            continue
        b"".join(_page(answer, _providers_json(state, freshness, answer.providers)))
        t6 = clock()
        times = (t1 - t0, t1b - t1, t2 - t1b, t3 - t2b, t4 - t3, t5 - t4, t6 - t5)
        for stage, spent_s in zip(STAGES, times, strict=True):
            spent[stage].append(spent_s * 1e6)
    return spent


def duckdb_selection(
    server: OfferServer, raws: list[bytes], parse: Callable[[bytes], OffersParams]
) -> None:
    """The questions as SQL over the copy in force, loaded into an in-memory DuckDB table,
    against the engine's selection (medians, µs)."""
    held = server._fresh() or server._snapshots()
    copy = held.copy
    assert copy is not None
    conn = duckdb.connect()
    conn.register("copy", copy.table)
    conn.execute("CREATE TABLE offers AS SELECT * FROM copy")
    spent: dict[str, list[float]] = defaultdict(list)
    for raw in raws:
        query = parse(raw)
        filters = query.filters()
        params: list[Any] = []
        where = " AND ".join(["TRUE", *scope_conditions(filters, params)])
        sql = f"SELECT * FROM offers WHERE {where} ORDER BY {order_by(filters.sort)}"
        sql += f" LIMIT {filters.limit or 10_000}"
        t0 = time.perf_counter()
        conn.execute(sql, params).to_arrow_table()
        t1 = time.perf_counter()
        copy.select(filters)
        spent["duckdb"].append((t1 - t0) * 1e6)
        spent["selection"].append((time.perf_counter() - t1) * 1e6)
    for name, times in spent.items():
        print(f"{name:<11} median {statistics.median(times):>10.1f} µs (SQL over the copy: duckdb)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--kind", choices=("unique", "varied", "varied10"), default="unique")
    parser.add_argument("--duckdb", action="store_true", help="also time SQL over the copy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Warehouse.open(Path(tmp) / "w.duckdb") as warehouse:
        market = build_market(args.offers, args.seed)
        store_market(warehouse, market)
        server = OfferServer(warehouse, Settings(db=Path(tmp) / "w.duckdb", scheduler=False))
        count = args.questions + 200
        questions = {
            "unique": lambda: unique_questions(count, args.seed),
            "varied": lambda: varied_questions(count, args.seed),
            "varied10": lambda: varied_questions(count, args.seed, limit=10),
        }[args.kind]()
        raws = [q.partition("?")[2].encode() for q in questions]
        parse, call = query_reader()
        everything = parse(b"")
        now = utc_now()
        first = server.answer(everything, now, server.freshness(now))
        assert first is not None
        prepare(first)  # every offer's JSON written
        time_stages(server, raws[:200], lambda: None, parse, call)  # code paths warm
        evict = np.ones(64 << 17)  # 64 MB

        print(
            f"{market.size:,} current offers, {args.questions:,} never-asked {args.kind} "
            f"questions (load average {os.getloadavg()[0]:.1f})"
        )
        print(f"{'stage':<11} {'warm mean':>10} {'median':>8} {'cold mean':>10} {'median':>8} (µs)")
        warm = time_stages(server, raws[200:], lambda: None, parse, call)
        cold = time_stages(server, raws[200:], evict.sum, parse, call)
        for stage in STAGES:
            w, c = warm[stage], cold[stage]
            print(
                f"{stage:<11} {statistics.fmean(w):>10.1f} {statistics.median(w):>8.1f} "
                f"{statistics.fmean(c):>10.1f} {statistics.median(c):>8.1f}"
            )
        if args.duckdb:
            duckdb_selection(server, raws[200:], parse)
        total = ("read", "freshness", "answer", "page")  # the route's own steps
        print(
            f"{'route':<11} {sum(statistics.fmean(warm[s]) for s in total):>10.1f} {'':>8} "
            f"{sum(statistics.fmean(cold[s]) for s in total):>10.1f}  (read + freshness + answer "
            "+ page)"
        )


if __name__ == "__main__":
    main()
