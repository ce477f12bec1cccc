"""The API keeps its own OpenAPI contract: schemathesis generates requests from `/openapi.json`.

Every operation, with a bounded number of examples, answers no 5xx, only documented statuses and
media types, and bodies that match their documented schemas; once with no API key configured
(valid and invalid requests), once with a key sent, and once with a key configured but not sent
(401s). Webhook targets resolve
to loopback, which the default settings refuse: nothing is ever sent (and the loopback guard
would stop anything that tried to leave the machine).
"""

from __future__ import annotations

import itertools

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from api.rest.deps import get_resolver
from pipeline.collection.collect import run_collection
from pipeline.settings import Settings
from tests.conftest import FIXTURES, OBSERVED_AT

API_KEY = "contract-test-key"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = {GenerationMode.POSITIVE: 12, GenerationMode.NEGATIVE: 8}


def _dead_end(_host: str, _port: int) -> list[str]:
    return ["127.0.0.1"]  # loopback: refused as a webhook target, so never called


def _offline(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("offline in tests", request=request)


def _no_network() -> httpx.Client:
    """What `POST /collections` fetches with: every provider fails at once, nothing leaves."""
    return httpx.Client(transport=httpx.MockTransport(_offline))


@pytest.fixture(params=["no key", "key sent", "key missing"])
def api(request, collected, db_path):
    mode = request.param
    app = create_app(
        Settings(db=db_path, scheduler=False, api_key=None if mode == "no key" else API_KEY),
        collected,
        clock=lambda: OBSERVED_AT,
        client_factory=_no_network,
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


def test_every_operation_keeps_its_documented_contract(api, request):
    """Valid requests in every mode; invalid ones too (bad types, out of bounds) without a key."""
    modes = [GenerationMode.POSITIVE]
    if request.node.callspec.params["api"] == "no key":
        modes.append(GenerationMode.NEGATIVE)
    failures: list[str] = []
    for result, mode in itertools.product(api.get_all_operations(), modes):
        operation = result.ok()

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_OPERATION[mode],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        def keeps_contract(case):
            case.call_and_validate(checks=CHECKS)

        try:
            keeps_contract()
        except Unsatisfiable:  # no parameters to make invalid (e.g. GET /healthz)
            assert mode is GenerationMode.NEGATIVE
        except Exception as exc:  # each operation's failure is reported, not only the first
            failures.append(f"{operation.label} ({mode}): {exc}")
    assert not failures, "\n\n".join(failures)
