"""No secret in any log line: connection-string passwords, API keys, webhook secrets, tracebacks
included; a failing lake connection's log is captured and grepped."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.redaction import MASK, SecretFilter, install_secret_masking
from pipeline.settings import Settings
from warehouse import Warehouse

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "Pg-Passw0rd-never-logged"
API_KEY = "gpuprices-key-never-logged"
PROVIDER_KEY = "lambda-key-never-logged"
UNREACHABLE_LAKE = (
    f"ducklake:postgres:dbname=gpuprices host=127.0.0.1 port=1 user=gp password={PASSWORD}"
)
SECRETS = (PASSWORD, API_KEY, PROVIDER_KEY, "whsec_abcdef0123456789")


@pytest.fixture
def log(monkeypatch, tmp_path):
    """The process as deployed: secrets in its environment, masking installed, a log captured."""
    monkeypatch.setenv("GPUPRICES_WAREHOUSE", UNREACHABLE_LAKE)
    monkeypatch.setenv("GPUPRICES_LAKE_DATA_PATH", str(tmp_path / "lake"))
    monkeypatch.setenv("GPUPRICES_API_KEY", API_KEY)
    monkeypatch.setenv("LAMBDA_API_KEY", PROVIDER_KEY)
    factory = logging.getLogRecordFactory()
    install_secret_masking(Settings.load())
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root, level = logging.getLogger(), logging.getLogger().level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)
    logging.setLogRecordFactory(factory)


def test_a_failing_lake_connection_logs_no_secret(log):
    logger = logging.getLogger("gpuprices.test")
    settings = Settings.load()
    try:
        Warehouse.open(settings.warehouse_target)
    except Exception as exc:
        logger.exception("lake unavailable: %s", exc)
        # what a driver's message carries (DuckDB's ATTACH errors repeat the connection string)
        logger.error("ATTACH '%s' failed", UNREACHABLE_LAKE, exc_info=exc)
    else:
        pytest.fail("the unreachable lake opened")
    text = log.getvalue()
    assert "127.0.0.1" in text and "Traceback" in text  # the failure is logged, in full
    assert PASSWORD not in text


def test_keys_webhook_secrets_and_bearer_values_are_masked_in_messages_args_and_tracebacks(log):
    logger = logging.getLogger("gpuprices.test")
    logger.warning("keys %s and %s, a %r", API_KEY, PROVIDER_KEY, "whsec_abcdef0123456789")
    logger.info("sent Authorization: Bearer %s to postgresql://gp:%s@db:5432/x", API_KEY, PASSWORD)
    try:
        raise RuntimeError(f"rejected {API_KEY} for postgresql://gp:{PASSWORD}@db/x")
    except RuntimeError:
        logger.exception("request failed")
    logger.info("numbers keep their format: %d offers, %.2f USD", 12, 1.5)
    text = log.getvalue()
    assert all(secret not in text for secret in SECRETS), text
    assert "RuntimeError: rejected ***" in text and "12 offers, 1.50 USD" in text


_FRAGMENTS = st.sampled_from([
    API_KEY, PASSWORD, "whsec_abc-12", "Bearer tok3n", "bearer\tx", "password = 's3cret'",
    "PASSWORD=hunter22", "postgresql://gp:pw@db/x", "s3://bucket:key@host", "GET /offers?gpu=A100",
])  # fmt: skip


@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=12)), max_size=6))
def test_masking_leaves_no_secret_and_keeps_a_text_that_holds_none_as_it_is(parts):
    """A log line with secrets or secret-shaped values spliced anywhere comes out with none of
    them; a line that can hold none comes out unchanged."""
    masking = SecretFilter([API_KEY, PASSWORD])
    text = " ".join(parts)
    masked = masking.mask(text)
    assert API_KEY not in masked and PASSWORD not in masked
    assert "whsec_abc" not in masked and "tok3n" not in masked and ":pw@" not in masked
    assert "s3cret" not in masked and "hunter22" not in masked
    shapes = ("whsec_", "bearer", "password", "://", API_KEY.lower(), PASSWORD.lower())
    if not any(shape in text.lower() for shape in shapes):
        assert masked == text
    assert MASK in masked or masked == text


def test_installing_twice_masks_once_and_with_the_latest_secrets(log, monkeypatch):
    monkeypatch.setenv("OTHER_API_KEY", "a-new-key-given-later")
    install_secret_masking(Settings.load())
    logging.getLogger("gpuprices.test").warning("%s %s", "a-new-key-given-later", API_KEY)
    assert log.getvalue().strip().endswith("gpuprices.test *** ***")


def test_serve_over_an_unreachable_lake_prints_one_line_without_the_password(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GPUPRICES_WAREHOUSE": UNREACHABLE_LAKE,
        "GPUPRICES_LAKE_DATA_PATH": str(tmp_path / "lake"),
        "GPUPRICES_API_KEY": API_KEY,
    }
    result = subprocess.run(
        [sys.executable, "-m", "api", "serve", "--no-scheduler", "--port", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "127.0.0.1" in output and PASSWORD not in output and API_KEY not in output
