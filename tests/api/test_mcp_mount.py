"""`/mcp` on the app: the MCP SDK is loaded by the first request to `/mcp`, not before (a serving
process never asked over MCP does not hold it), and that first request is answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import sys
from fastapi.testclient import TestClient
from api.app import create_app
from api.cli.commands import app as cli
from pipeline.settings import Settings
from warehouse import Warehouse

loaded = lambda: sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp."))
app = create_app(Settings(scheduler=False), Warehouse.open(":memory:"))
with TestClient(app, base_url="http://127.0.0.1:8000") as client:
    assert client.get("/healthz").status_code == 200
    before = loaded()
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    answered = client.post("/mcp", json=initialize, headers=headers)
print(before, bool(loaded()), answered.status_code, '"serverInfo"' in answered.text)
"""


def test_the_mcp_sdk_is_loaded_by_the_first_mcp_request_and_that_request_is_answered() -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]", "True", "200", "True"]
