"""`/mcp` keeps no sessions: the tools are reads, so no client can fill a session table, lock
the others out with 503s, or make shutdown close (and log) thousands of sessions."""

from __future__ import annotations

import logging

from fastapi.testclient import TestClient

from api.app import create_app
from pipeline.settings import Settings
from tests.conftest import LOOPBACK_URL
from warehouse import Warehouse

CLIENTS = 300
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def test_many_initialize_calls_open_no_session_and_every_client_is_answered(caplog):
    app = create_app(Settings(scheduler=False), Warehouse.open(":memory:"))
    with caplog.at_level(logging.INFO), TestClient(app, base_url=LOOPBACK_URL) as client:
        answers = [client.post("/mcp", json=INITIALIZE, headers=HEADERS) for _ in range(CLIENTS)]
        assert [a.status_code for a in answers] == [200] * CLIENTS
        assert all("mcp-session-id" not in a.headers for a in answers)
        manager = app.state.mcp_sessions
        assert manager.stateless and len(manager._server_instances) == 0
        # a client that never initialized is answered too: no session is asked for
        tools = client.post("/mcp", json=LIST_TOOLS, headers=HEADERS)
        assert tools.status_code == 200 and '"offers"' in tools.text
    per_session = [r for r in caplog.records if "session" in r.getMessage().lower()]
    assert len(per_session) <= 2, [r.getMessage() for r in per_session[:5]]
