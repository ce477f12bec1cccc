"""The API keeps its own OpenAPI contract: schemathesis generates requests from `/openapi.json`.

Every operation, with a bounded number of examples, answers no 5xx, only documented statuses and
media types, and bodies that match their documented schemas; once with no API key configured,
once with a key sent, and once with a key configured but not sent (401s). Webhook targets resolve
to loopback, which the default settings refuse: nothing is ever sent (and the loopback guard
would stop anything that tried to leave the machine).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.deps import get_resolver
from api.main import create_app
from pipeline.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT

API_KEY = "contract-test-key"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 12


def _dead_end(_host: str, _port: int) -> list[str]:
    return ["127.0.0.1"]  # loopback: refused as a webhook target, so never called


@pytest.fixture(params=["no key", "key sent", "key missing"])
def api(request, collected, db_path):
    mode = request.param
    app = create_app(
        Settings(db=db_path, scheduler=False, api_key=None if mode == "no key" else API_KEY),
        collected,
        clock=lambda: OBSERVED_AT,
    )
    app.dependency_overrides[get_resolver] = lambda: _dead_end
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    if mode == "key sent":
        schema.config.headers = {"Authorization": f"Bearer {API_KEY}"}
    return schema


@pytest.fixture
def collected(warehouse):
    run_collection(
        ["vastai", "lambda"],
        warehouse,
        replays={
            "vastai": FIXTURES / "vastai_bundles.json",
            "lambda": FIXTURES / "lambda_instance_types.json",
        },
        now=lambda: OBSERVED_AT,
    )
    return warehouse


def test_every_operation_keeps_its_documented_contract(api):
    failures: list[str] = []
    for result in api.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        def keeps_contract(case):
            case.call_and_validate(checks=CHECKS)

        try:
            keeps_contract()
        except Exception as exc:  # each operation's failure is reported, not only the first
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
