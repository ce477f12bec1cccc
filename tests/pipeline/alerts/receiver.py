"""Helpers for the alert tests: a real webhook receiver on 127.0.0.1, rules and events to send to
it, and moved Vast.ai prices."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

from pipeline.alerts import AlertKind, AlertSpec, Condition, CreatedAlert, create_alert
from pipeline.alerts.events import new_delivery
from pipeline.settings import Settings
from tests.conftest import FIXTURES
from warehouse import Warehouse
from warehouse import alerts as wa

H100_OFFER_ID = 24581137
H100_GPUS = 8


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    hang: bool = False
    """Never answer (until the receiver closes)."""
    trickle_s: float | None = None
    """Send the answer one byte at a time, this long apart (a hostile, slow receiver)."""


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """Answers POSTs from a script (then `default`), recording every request it got."""

    def __init__(self, answers: list[Answer] | None = None, default: Answer | None = None):
        self.answers = list(answers or [])
        self.default = default or Answer()
        self.requests: list[Received] = []
        self.released = threading.Event()
        self.in_flight: dict[str, int] = {}
        self.most_in_flight_per_id = 0
        """Most requests with one `webhook-id` that were being answered at the same time."""
        self.cut_off = 0
        """Answers the client stopped reading before they were whole."""
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                webhook_id = self.headers.get("webhook-id", "")
                with receiver._lock:
                    receiver.requests.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    answer = receiver.answers.pop(0) if receiver.answers else receiver.default
                    receiver.in_flight[webhook_id] = receiver.in_flight.get(webhook_id, 0) + 1
                    receiver.most_in_flight_per_id = max(
                        receiver.most_in_flight_per_id, receiver.in_flight[webhook_id]
                    )
                try:
                    self._answer(answer)
                except OSError:
                    with receiver._lock:
                        receiver.cut_off += 1
                finally:
                    with receiver._lock:
                        receiver.in_flight[webhook_id] -= 1

            def _answer(self, answer: Answer) -> None:
                if answer.hang:
                    receiver.released.wait(timeout=30)
                    return
                head = [f"HTTP/1.1 {answer.status} Answer"]
                head += [f"{name}: {value}" for name, value in answer.headers.items()]
                head += [f"content-length: {len(answer.body)}", "", ""]
                raw = "\r\n".join(head).encode("latin-1") + answer.body
                if answer.trickle_s is None:
                    self.wfile.write(raw)
                    return
                for byte in raw:
                    if receiver.released.wait(answer.trickle_s):
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.requests]


@contextmanager
def receiving(answers: list[Answer] | None = None, default: Answer | None = None) -> Iterator[
    Receiver
]:
    receiver = Receiver(answers, default)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(timeout=5)


def vast_bundles(tmp_path: Path, h100_price_per_gpu_hour: float, name: str = "") -> Path:
    """A copy of the Vast.ai fixture whose H100 offer costs this much per GPU-hour on demand."""
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    for offer in body["offers"]:
        if offer["id"] == H100_OFFER_ID:
            offer["dph_base"] = h100_price_per_gpu_hour * H100_GPUS
    path = tmp_path / f"vast-{name or h100_price_per_gpu_hour}.json"
    path.write_bytes(orjson.dumps(body))
    return path


class Clock:
    """A clock the test moves; starts near the real time, as receivers check timestamps."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> datetime:
        self.now += delta
        return self.now


def add_rule(warehouse: Warehouse, settings: Settings, url: str, now: datetime) -> CreatedAlert:
    condition = Condition.of(AlertKind.AVAILABILITY, gpu="H100-80GB")
    return create_alert(warehouse, AlertSpec(url=url, condition=condition), settings, now)


def enqueue(
    warehouse: Warehouse, rule_id: str, now: datetime, body: str = '{"type":"alert.test"}'
) -> str:
    """A stored event for the rule, due now; its delivery id."""
    delivery = new_delivery(rule_id, "alert.test", body, now)
    with warehouse.transaction() as conn:
        wa.insert_delivery(conn, delivery)
    return delivery.delivery_id
