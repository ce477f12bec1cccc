"""The floor of `bench/load.py`: a bare ASGI app under uvicorn as `gpuprices serve` runs it.

No routing, no validation, no work: every request gets the same bytes (as many as a typical
`/offers` answer). What it serves per second is what the web layer alone can do on this machine
now; `/offers` is measured against it in the same run.

    .venv/bin/python bench/floor.py --port 8001 --body-bytes 20000
"""

from __future__ import annotations

import argparse
from typing import Any

import uvicorn

from api.rest.middleware import tune_for_serving


def bare_app(body: bytes) -> Any:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body-bytes", type=int, default=20_000)
    args = parser.parse_args()
    tune_for_serving()  # as `gpuprices serve` does
    body = b"[" + b"0" * max(0, args.body_bytes - 2) + b"]"
    # The same uvicorn settings as `gpuprices serve` (access log included)
    uvicorn.run(bare_app(body), host="127.0.0.1", port=args.port, log_level="info")


if __name__ == "__main__":
    main()
