"""A real S3-compatible server on 127.0.0.1 for the lake tests (and bench/lake.py): moto's server
(`moto[server]`, the dev extra) in a process of its own, behind a loopback TCP proxy the tests
can cut and restore.

The server enforces credentials: its IAM holds one user allowed `s3:*`, whose key the clients
use; a wrong key or secret is refused (`InvalidAccessKeyId`, `SignatureDoesNotMatch`). Its data
lives in memory, so an outage is made at the proxy (every connection cut, new ones reset), never
by stopping the server.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import free_port

REGION = "eu-west-1"
_BUFFER_BYTES = 64 * 1024
_ALLOW_S3 = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }
)


class Proxy:
    """A loopback TCP proxy in front of `upstream`: `cut()` drops every connection and resets
    new ones until `restore()`; `cut_on_write()` does so as the next PUT or POST passes (its
    first bytes forwarded: the server sees a request cut off mid-body)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._down = False
        self._armed = False
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            self._down = True
            self._armed = False
            self.cuts += 1
            for sock in self._open:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def cut_on_write(self) -> None:
        with self._lock:
            self._armed = True

    def restore(self) -> None:
        with self._lock:
            self._down = False
            self._armed = False

    @property
    def down(self) -> bool:
        return self._down

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._down:
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                    client.close()  # a reset: the store is unreachable
                    continue
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
                except OSError:
                    client.close()
                    continue
                self._open.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, outbound: bool) -> None:
        try:
            while chunk := source.recv(_BUFFER_BYTES):
                if outbound and self._armed and chunk.startswith((b"PUT ", b"POST ")):
                    sink.sendall(chunk[: len(chunk) // 2])
                    self.cut()
                    return
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with self._lock:
                for sock in (source, sink):
                    if sock in self._open:
                        self._open.discard(sock)
                        with suppress(OSError):
                            sock.shutdown(socket.SHUT_RDWR)
                        sock.close()


@dataclass
class ObjectStore:
    """moto's S3 server and the proxy clients reach it through."""

    server: subprocess.Popen[bytes] = field(repr=False)
    server_port: int
    proxy: Proxy = field(repr=False)
    key_id: str
    secret: str = field(repr=False)

    @property
    def endpoint(self) -> str:
        """What clients use (`AWS_ENDPOINT_URL_S3`): the proxy."""
        return f"http://127.0.0.1:{self.proxy.port}"

    def env(self) -> dict[str, str]:
        """The standard AWS variables a user sets for this store."""
        return {
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
        }

    def client(self) -> Any:
        """A boto3 client straight to the server (not through the proxy), with the user's key."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.server_port}",
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        name = f"lake-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(
            Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        return name

    def keys(self, bucket: str) -> dict[str, int]:
        """Every object in `bucket`: key -> size in bytes."""
        found: dict[str, int] = {}
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        for page in pages:
            for item in page.get("Contents", []):
                found[item["Key"]] = int(item["Size"])
        return found

    def stop(self) -> None:
        self.proxy.close()
        self.server.terminate()
        try:
            self.server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if process.poll() is not None:
            raise RuntimeError(f"moto's server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"moto's server did not listen on 127.0.0.1:{port} in {timeout_s}s")


def _provision(port: int) -> tuple[str, str]:
    """An IAM user allowed `s3:*` and its access key; then credentials are enforced."""
    import boto3
    import httpx

    iam = boto3.client(
        "iam",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
        region_name=REGION,
    )
    iam.create_user(UserName="gpuprices")
    iam.put_user_policy(UserName="gpuprices", PolicyName="lake", PolicyDocument=_ALLOW_S3)
    key = iam.create_access_key(UserName="gpuprices")["AccessKey"]
    # From now on every request must be signed by a known key with a permitting policy.
    httpx.post(f"http://127.0.0.1:{port}/moto-api/reset-auth", content=b"0").raise_for_status()
    return str(key["AccessKeyId"]), str(key["SecretAccessKey"])


@contextmanager
def object_store(log: Path) -> Iterator[ObjectStore]:
    """moto's S3 server on a free loopback port, credentials enforced, behind a `Proxy`."""
    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, server, 60)
        key_id, secret = _provision(port)
        store = ObjectStore(server, port, Proxy(port), key_id, secret)
    except BaseException:
        server.kill()
        server.wait()
        raise
    try:
        yield store
    finally:
        store.stop()
