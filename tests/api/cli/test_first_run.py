"""Everyday CLI use: tables in 80 columns, times as people write them, quotes that explain
themselves, price alerts on on-demand offers, and empty states that say what to do."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console
from typer.testing import CliRunner

from api.cli.commands import app
from api.cli.offers import offers_table
from pipeline.timeparse import TimeParseError, parse_time_or_ago
from tests.conftest import FIXTURES

runner = CliRunner()
VAST = FIXTURES / "vastai_bundles.json"
TODAY = datetime.now(UTC).date()
YESTERDAY = TODAY - timedelta(days=1)


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def collected_db(db_path):
    result = invoke("collect", "--replay", f"vastai={VAST}", "--at", YESTERDAY, "--db", db_path)
    assert result.exit_code == 0, result.output
    return db_path


def _row(**changes):
    row = {
        "gpu": "H100-80GB", "gpu_raw": "H100 SXM", "form_factor": "SXM", "provider": "coreweave",
        "pricing": "on_demand", "price_per_gpu_hour": 6.155, "price_per_hour": 49.24,
        "gpu_count": 8, "region": "US-EAST-04 (Weehawken, New Jersey)", "available": True,
        "stale": False, "observed_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    return {**row, **changes}


def test_the_offers_table_fits_80_columns_and_shows_stale_and_sold_out():
    rows = [_row(), _row(available=False, stale=True, pricing="spot", gpu="RTX PRO 6000 Blackwell")]
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(offers_table(rows))
    text = console.file.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "sold out" in text and "STALE" in text and "1 stale" in text
    assert "available" in text and "Weehawken" in text and "6.1550" in text


def test_the_offers_table_shows_both_prices_and_marks_the_sort_column():
    rows = [_row()]
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(offers_table(rows))
    console.print(offers_table(rows, "-price_per_hour"))
    first, second = console.file.getvalue().split("1 offers")[1:]
    assert "$/GPU-h▲" in first and "$/h▲" not in first
    assert "$/h▼" in second and "$/GPU-h▲" not in second
    assert f"{rows[0]['price_per_hour']:.2f}" in first
    assert max(len(line) for line in console.file.getvalue().splitlines()) <= 80


def test_an_empty_database_says_how_to_get_offers(db_path, tmp_path):
    bad = tmp_path / "vastai.json"
    bad.write_text("{}")
    failed = invoke("collect", "--replay", f"vastai={bad}", "--db", db_path)
    assert failed.exit_code == 1 and db_path.exists()
    result = invoke("offers", "--db", db_path)
    assert result.exit_code == 0
    assert "No offers yet" in result.output and "gpuprices demo" in result.output
    filtered = invoke("offers", "--provider", "lambda", "--db", db_path)
    assert "No offers match these filters" in filtered.output


def test_times_take_dates_and_durations_ago(collected_db):
    as_of = invoke("offers", "--as-of", TODAY, "--format", "json", "--db", collected_db)
    assert as_of.exit_code == 0, as_of.output
    assert json.loads(as_of.stdout)["offers"]
    history = invoke("history", "--gpu", "A100-80GB", "--since", YESTERDAY - timedelta(days=1),
                     "--until", TODAY, "--format", "json", "--db", collected_db)  # fmt: skip
    assert history.exit_code == 0, history.output
    assert json.loads(history.stdout)["since"].startswith(str(YESTERDAY - timedelta(days=1)))
    recent = invoke("history", "--gpu", "A100-80GB", "--since", "7d", "--format", "json",
                    "--db", collected_db)  # fmt: skip
    assert recent.exit_code == 0, recent.output
    since = datetime.fromisoformat(json.loads(recent.stdout)["since"])
    assert abs(datetime.now(UTC) - timedelta(days=7) - since) < timedelta(hours=2)
    bad = invoke("offers", "--as-of", "yesterday", "--db", collected_db)
    assert bad.exit_code == 2 and "7d" in bad.output


def test_the_shared_parser_reads_a_duration_as_that_long_ago():
    now = datetime(2026, 3, 1, tzinfo=UTC)
    assert parse_time_or_ago("2h", now) == now - timedelta(hours=2)
    assert parse_time_or_ago("P1D", now) == now - timedelta(days=1)
    assert parse_time_or_ago("2026-01-01", now) == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(TimeParseError, match="duration ago"):
        parse_time_or_ago("soon", now)


def test_a_quote_names_the_model_it_used_and_explains_the_layout():
    result = invoke("quote", "--model", "Llama-3.3-70B", "--method", "full", "--gpu", "H100",
                    "--gpus", "16")  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Llama-3.3-70B uses the Llama-3.1-70B architecture" in text
    assert "16 GPUs, " in text and "split across the GPUs" in text
    assert "(none)" not in text


def test_quote_config_is_the_settings_file_like_everywhere_else(tmp_path, collected_db):
    result = invoke("quote", "--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "50M",
                    "--config", tmp_path / "missing.toml", "--db", collected_db)  # fmt: skip
    assert result.exit_code == 1 and "missing.toml does not exist" in result.output
    settings = tmp_path / "gpuprices.toml"
    settings.write_text(f'db = "{collected_db}"\n')
    quoted = invoke("quote", "--model", "Llama-3.1-8B", "--method", "qlora", "--tokens", "50M",
                    "--config", settings, "--format", "json")  # fmt: skip
    assert quoted.exit_code == 0, quoted.output
    assert json.loads(quoted.stdout)["quotes"]


def test_a_price_alert_without_pricing_ignores_spot_offers(db_path, monkeypatch):
    monkeypatch.setenv("GPUPRICES_ALLOW_PRIVATE_WEBHOOKS", "true")
    hook = ["--url", "http://127.0.0.1:9/hook", "--gpu", "RTX 4090", "--provider", "vastai",
            "--below", "0.22", "--db", db_path]  # fmt: skip
    plain = invoke("alerts", "add", *hook, "--format", "json")
    spot = invoke("alerts", "add", *hook, "--pricing", "spot", "--format", "json")
    assert plain.exit_code == 0 and spot.exit_code == 0, plain.output + spot.output
    assert json.loads(plain.stdout)["pricing"] == "on_demand"
    invoke("collect", "--replay", f"vastai={VAST}", "--db", db_path)
    alerts = json.loads(invoke("alerts", "list", "--format", "json", "--db", db_path).stdout)
    state = {a["pricing"]: a["state"] for a in alerts["alerts"]}
    assert state["on_demand"]["last_value"] == pytest.approx(0.2467, abs=1e-4)  # 0.20 is spot
    assert state["on_demand"]["last_fired_at"] is None
    assert state["spot"]["last_value"] == pytest.approx(0.20)
    assert state["spot"]["last_fired_at"] is not None


def test_the_help_says_a_price_alert_watches_on_demand():
    result = invoke("alerts", "add", "--help")
    assert "on-demand offers unless --pricing spot" in " ".join(result.output.split())
