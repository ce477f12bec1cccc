"""The CLI beside a running `serve` (a real process on 127.0.0.1), and with `--api URL`.

The server holds the database (DuckDB lets one process open it), so a command that answers at
all while it runs went through the HTTP API.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from api.cli.commands import app
from api.cli.remote import address_file
from tests.api.cli.test_serve import ROOT
from tests.conftest import FIXTURES, free_port

runner = CliRunner()
RECENT = (datetime.now(UTC) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _wait_for(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/healthz", timeout=1)
            return
        except httpx.TransportError:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """`gpuprices serve --no-scheduler` over a database with Vast.ai's recorded offers."""
    db = tmp_path_factory.mktemp("served") / "prices.duckdb"
    result = invoke("collect", "--replay", f"vastai={FIXTURES / 'vastai_bundles.json'}",
                    "--at", RECENT, "--db", db)
    assert result.exit_code == 0, result.output
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "api", "serve", "--no-scheduler", "--port", str(port), "--db", db],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GPUPRICES_ALLOW_PRIVATE_WEBHOOKS": "true"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, process)
        yield url, db
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        assert not address_file(db).exists(), "a clean stop removes the address"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_serve_leaves_its_address_beside_the_database(server):
    url, db = server
    found = json.loads(address_file(db).read_text())
    assert f"http://127.0.0.1:{found['port']}" == url and found["pid"] > 0


def test_offers_beside_a_server_print_what_get_offers_answers(server):
    url, db = server
    result = invoke("offers", "--gpu", "A100-80GB", "--format", "json", "--db", db)
    assert result.exit_code == 0, result.output
    api = httpx.get(f"{url}/offers", params={"gpu": "A100-80GB"}).json()
    assert json.loads(result.stdout)["offers"] == api["offers"]
    assert len(api["offers"]) == 2


def test_collect_beside_a_server_makes_the_server_collect_the_uploaded_answers(server):
    url, db = server
    result = invoke("collect", "--replay", f"lambda={FIXTURES / 'lambda_instance_types.json'}",
                    "--db", db)
    assert result.exit_code == 0, result.output
    assert f"by {url}" in result.output and "lambda" in result.output
    providers = {p["provider"]: p for p in httpx.get(f"{url}/providers").json()["providers"]}
    assert providers["lambda"]["last_status"] == "ok" and providers["lambda"]["offer_count"] > 0


def test_api_url_works_from_another_directory_and_creates_nothing_there(
    server, tmp_path, monkeypatch
):
    url, _db = server
    monkeypatch.chdir(tmp_path)
    result = invoke("offers", "--provider", "vastai", "--format", "json", "--api", url)
    assert result.exit_code == 0, result.output
    assert {o["provider"] for o in json.loads(result.stdout)["offers"]} == {"vastai"}
    gpus = invoke("gpus", "--format", "json", "--api", url)
    assert gpus.exit_code == 0 and json.loads(gpus.stdout)["count"] > 10
    assert list(tmp_path.iterdir()) == []


def test_history_quote_and_export_go_through_the_server(server, tmp_path):
    _url, db = server
    history = invoke("history", "--gpu", "A100-80GB", "--since", "7d", "--format", "json",
                     "--db", db)
    assert history.exit_code == 0, history.output
    assert json.loads(history.stdout)["series"]
    quote = invoke("quote", "--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "50M",
                   "--format", "json", "--db", db)
    assert quote.exit_code == 0, quote.output
    assert json.loads(quote.stdout)["quotes"]
    out = tmp_path / "export"
    export = invoke("export", "--out", out, "--since", "1d", "--db", db)
    assert export.exit_code == 0, export.output
    assert list(out.glob("date=*/provider=vastai/*.parquet"))


def test_index_and_market_go_through_the_server_and_print_what_it_answers(server, tmp_path):
    url, db = server
    index = invoke("index", "--gpu", "A100-80GB", "--interval", "1h", "--format", "json",
                   "--db", db)
    assert index.exit_code == 0, index.output
    answered = httpx.get(f"{url}/index", params={"gpu": "A100-80GB", "interval": "1h"}).json()
    assert json.loads(index.stdout)["series"] == answered["series"] != []
    market = invoke("market", "--gpu", "A100-80GB", "--below", "1.5,2", "--format", "json",
                    "--api", url)
    assert market.exit_code == 0, market.output
    assert [b["price"] for b in json.loads(market.stdout)["below"]] == [1.5, 2.0]
    refused = invoke("market", "--gpu", "A100-80GB", "--days", "9999", "--api", url)
    assert refused.exit_code == 2 and "Traceback" not in refused.output


def test_alerts_are_managed_through_the_server(server):
    _url, db = server
    added = invoke("alerts", "add", "--url", "http://127.0.0.1:9/hook", "--gpu", "H100-80GB",
                   "--below", "1.5", "--format", "json", "--db", db)
    assert added.exit_code == 0, added.output
    created = json.loads(added.stdout)
    assert created["secret"].startswith("whsec_") and created["pricing"] == "on_demand"
    listed = invoke("alerts", "list", "--format", "json", "--db", db)
    assert created["id"] in listed.stdout
    deliveries = invoke("alerts", "deliveries", created["id"], "--db", db)
    assert deliveries.exit_code == 0, deliveries.output
    assert invoke("alerts", "rm", created["id"], "--db", db).exit_code == 0
    gone = invoke("alerts", "rm", created["id"], "--db", db)
    assert gone.exit_code == 1 and "HTTP 404" in gone.output


def test_an_api_error_is_one_line_and_a_bad_question_exits_2(server):
    _url, db = server
    result = invoke("offers", "--gpu", "H1000", "--db", db)
    assert result.exit_code == 2
    assert "Unknown GPU 'H1000'" in result.output and "Traceback" not in result.output


def test_prune_beside_a_server_says_the_server_prunes(server):
    url, db = server
    result = invoke("prune", "--db", db)
    assert result.exit_code == 1 and f"{url} holds this database" in result.output


def test_an_unreachable_api_is_one_line_exit_1():
    result = invoke("offers", "--api", f"http://127.0.0.1:{free_port()}")
    assert result.exit_code == 1
    assert "cannot reach the gpuprices server" in result.output


def test_an_address_left_by_a_dead_server_is_ignored(tmp_path):
    db = tmp_path / "x.duckdb"
    result = invoke("collect", "--replay", f"vastai={FIXTURES / 'vastai_bundles.json'}",
                    "--db", db)
    assert result.exit_code == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    address_file(db).write_text(json.dumps({"host": "127.0.0.1", "port": 9, "pid": dead.pid}))
    offers = invoke("offers", "--format", "json", "--db", db)
    assert offers.exit_code == 0, offers.output
    assert json.loads(offers.stdout)["offers"]


def test_quote_emit_goes_through_the_server_and_prints_its_task_file(server):
    _url, db = server
    task = invoke("quote", "--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "50M",
                  "--emit", "dstack", "--db", db)
    assert task.exit_code == 0, task.output
    assert task.stdout.startswith("# gpuprices quote 1 of ")
    assert "type: task" in task.stdout and "GPUPRICES_TRAINING" in task.stdout
