"""One limit on request-head bytes, whichever HTTP parser runs: 431 past `MAX_HEADER_BYTES`.

Against the protocol `serve` really runs (`gpuprices serve` in its own process: httptools), and
against each parser uvicorn can run, on a real server on 127.0.0.1.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import httpx
import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.rest.connections import MAX_HEADER_BYTES, guarded_protocol, uvicorn_limits
from pipeline.settings import Settings
from tests.api.rest.test_connections import serving
from tests.conftest import free_port

KIB = 1024


def _ask(port: int, header_bytes: int, path: str = "/healthz", body: bytes = b"") -> bytes:
    """A raw request with one `X-Pad` header of `header_bytes`; the answer's first bytes."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n"
        if body
        else f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    ).encode()
    request = head + b"X-Pad: " + b"a" * header_bytes + b"\r\nConnection: close\r\n\r\n" + body
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        # refused before it was all sent: the answer was written first
        with suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        answer = b""
        with suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer


def test_serve_runs_httptools():
    """The parser `serve` picks, so the test below meets the one it really uses."""
    assert issubclass(uvicorn_limits(Settings())["http"], HttpToolsProtocol)


def test_serve_answers_an_oversized_head_431_and_keeps_serving(db_path):
    with serving(db_path) as port:
        refused = _ask(port, 1024 * KIB)
        assert refused.startswith(b"HTTP/1.1 431 "), refused[:200]
        assert b"64 KiB" in refused and b"shorter" in refused
        assert _ask(port, 60 * KIB).startswith(b"HTTP/1.1 200 ")
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200


async def _echo(scope, receive, send):
    assert scope["type"] == "http"
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


@contextmanager
def _server(base: type) -> Iterator[int]:
    port = free_port()
    limits = {**uvicorn_limits(Settings()), "http": guarded_protocol(Settings(), base)}
    server = uvicorn.Server(
        uvicorn.Config(_echo, host="127.0.0.1", port=port, log_level="warning", **limits)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.parametrize("base", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
def test_one_head_limit_whichever_parser_runs(base):
    with _server(base) as port:
        just_under = MAX_HEADER_BYTES - 200  # the rest of the head fits beside it
        assert _ask(port, just_under).startswith(b"HTTP/1.1 200 ")
        assert _ask(port, MAX_HEADER_BYTES + 1).startswith(b"HTTP/1.1 431 ")
        assert _ask(port, 8 * 1024 * KIB).startswith(b"HTTP/1.1 431 ")
        # a large body sent with its head in the same reads is a body, not a head
        body = b"b" * (2 * 1024 * KIB)
        answer = _ask(port, 100, path="/upload", body=body)
        assert answer.startswith(b"HTTP/1.1 200 ") and b"\r\n%d\r\n" % len(body) in answer
