"""Edge benchmark (issue 17): the event loop stays free under the heaviest allowed requests.

Against `gpuprices serve --no-scheduler` on 127.0.0.1 over N current offers (bench/market.py):

1. `/healthz` alone: p50 / p99 / max of sequential requests (the baseline).
2. `/healthz` while 8 clients ask `/offers` for the largest allowed page (`limit=10000`), gzipped
   (`--encoding`), each request a distinct query (a different `max_price_per_gpu`):
   /healthz p50 / p99 / max (target: max under 50 ms), and the /offers latencies and rate.
3. A 20 MB `POST /quotes` body, with a Content-Length and chunked: time to the 413.
4. `POST /quotes` with the largest `top`: time and size.

The 8 clients run in a child process, the /healthz probe in this one, so neither waits on the
other's interpreter. Traffic goes to 127.0.0.1 only; every loop is bounded.

    .venv/bin/python bench/edge.py --offers 93000
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import fastapi
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from market import build_market, serving, store_market  # noqa: E402

from warehouse import Warehouse  # noqa: E402

CLIENTS = 8
PAGE = 10_000
HEALTHZ_TARGET_MS = 50.0
MB = 1024 * 1024


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float]) -> str:
    return (
        f"n={len(values)} p50={_ms(values, 0.5):.1f} ms p99={_ms(values, 0.99):.1f} ms "
        f"max={1000 * max(values):.1f} ms"
    )


def probe(port: int, seconds: float, every_s: float = 0.02) -> list[float]:
    """Sequential `/healthz` on one keep-alive connection for `seconds`; their latencies."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        latencies.append(time.perf_counter() - started)
        assert response.status == 200, response.status
        time.sleep(every_s)
    conn.close()
    return latencies


async def _body(reader: asyncio.StreamReader, length: int | None) -> bytes:
    """A response body of `length` bytes, or chunked (`length` None)."""
    if length is not None:
        return await reader.readexactly(length)
    body = b""
    while size := int((await reader.readline()).strip(), 16):
        body += (await reader.readexactly(size + 2))[:-2]
    await reader.readline()  # the empty line after the last chunk
    return body


async def _offers_client(port: int, index: int, deadline: float, out: list, encoding: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    try:
        while time.perf_counter() < deadline:
            price = 50 + index * 1000 + n  # distinct per request: never a cached page
            path = f"/offers?limit={PAGE}&include_unavailable=true&max_price_per_gpu={price}"
            started = time.perf_counter()
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Accept-Encoding: {encoding}\r\n\r\n".encode()
            )
            status = (await reader.readline()).split()[1]
            length = None
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await _body(reader, length)
            out.append((time.perf_counter() - started, int(status), len(body)))
            n += 1
    finally:
        writer.close()


def _offers_load(port: int, seconds: float, queue: multiprocessing.Queue, encoding: str) -> None:
    results: list = []

    async def run() -> None:
        deadline = time.perf_counter() + seconds
        await asyncio.gather(
            *(_offers_client(port, i, deadline, results, encoding) for i in range(CLIENTS))
        )

    asyncio.run(run())
    queue.put(results)


async def _big_body(port: int, chunked: bool) -> tuple[float, str]:
    """Send a 20 MB body as fast as the server reads it; seconds until the status line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {20 * MB}"
    started = time.perf_counter()
    writer.write(
        f"POST /quotes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n\r\n".encode()
    )

    async def send() -> None:
        chunk = b"x" * 65536
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk
        try:
            for _ in range(20 * MB // len(chunk)):
                writer.write(framed)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the server answered and closed: the rest was never read

    sender = asyncio.create_task(send())
    status = await asyncio.wait_for(reader.readline(), timeout=30)
    elapsed = time.perf_counter() - started
    sender.cancel()
    writer.close()
    return elapsed, status.decode().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=93_000, help="current offers stored")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of the load phase")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument(
        "--encoding", default="gzip", help="Accept-Encoding of the page clients (identity: none)"
    )
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, fastapi {fastapi.__version__}, "
        f"uvicorn {uvicorn.__version__}, {os.cpu_count()} CPUs; {args.offers:,} offers; "
        f"load average {os.getloadavg()[0]:.1f} (figures scale with other work on the machine)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "edge.duckdb"
        with Warehouse.open(db) as warehouse:
            store_market(warehouse, build_market(args.offers, args.seed))
        with serving(db) as (base, _pid):
            port = int(base.rsplit(":", 1)[1])
            warm = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            warm.request("GET", "/offers?limit=1")  # the offers copy in memory, written as JSON
            warm.getresponse().read()
            warm.close()
            probe(port, 2.0)  # warm-up: the connections
            baseline = probe(port, 3.0)
            print(f"1. /healthz alone: {_summary(baseline)}")

            queue: multiprocessing.Queue = multiprocessing.Queue()
            load = multiprocessing.Process(
                target=_offers_load, args=(port, args.seconds, queue, args.encoding)
            )
            load.start()
            time.sleep(0.5)  # let the clients start their first pages
            under_load = probe(port, args.seconds - 1.0)
            results = queue.get(timeout=args.seconds + 120)
            load.join()
            met = "MET" if max(under_load) * 1000 < HEALTHZ_TARGET_MS else "NOT MET"
            print(
                f"2. /healthz while {CLIENTS} clients ask /offers?limit={PAGE:,} "
                f"(Accept-Encoding: {args.encoding}): "
                f"{_summary(under_load)} [max < {HEALTHZ_TARGET_MS:.0f} ms: {met}]"
            )
            latencies = [r[0] for r in results]
            statuses = sorted({r[1] for r in results})
            sizes = statistics.mean(r[2] for r in results) / MB if results else 0
            print(
                f"   /offers pages: {_summary(latencies)}, {len(results) / args.seconds:.1f}/s, "
                f"statuses {statuses}, {sizes:.1f} MB each as sent"
            )

            for chunked in (False, True):
                elapsed, status = asyncio.run(_big_body(port, chunked))
                how = "chunked" if chunked else "Content-Length"
                print(f"3. 20 MB POST /quotes ({how}): '{status}' after {elapsed * 1000:.0f} ms")

            quote = {"model": "Llama-3.1-8B", "method": "qlora", "tokens": "50M", "top": PAGE}
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            started = time.perf_counter()
            conn.request("POST", "/quotes", json.dumps(quote), {"Content-Type": "application/json"})
            response = conn.getresponse()
            body = response.read()
            print(
                f"4. POST /quotes top={PAGE:,}: {response.status} in "
                f"{(time.perf_counter() - started) * 1000:.0f} ms, {len(body) / MB:.1f} MB"
            )


if __name__ == "__main__":
    main()
