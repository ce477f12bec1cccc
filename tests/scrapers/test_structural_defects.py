"""No structural defect lets an unexpected exception out of a parser (issue 46, finding 8).

Every provider's recorded answers (each fixture under tests/fixtures/ named after its module's
`NAME`, a directory replayed through its `replay_directory`) with a few of their nodes replaced
by values of the wrong type: `parse` returns a `ParseResult` (the broken parts rejected) or
raises `ProviderPayloadError` for the whole answer, nothing else. A JSON answer's nodes are its
values (a JSON document held in a string, as AWS's fetch wraps each answer, is walked too); an
HTML page's are its text nodes. The examples are bounded so the suite stays fast in CI.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scrapers
from scrapers import ParseResult, ProviderPayloadError
from scrapers.base import Credentials
from scrapers.registry import Source, replay_handler
from tests.conftest import FIXTURES, OBSERVED_AT

EXAMPLES_PER_ANSWER = 15
MAX_NODES = 4000
"""Nodes a replacement is chosen among (the first ones in document order)."""
NESTED = "\x00nested"
WRONG_JSON: list[Any] = [
    None, True, False, 0, -1, 2.5, 10**30, 1e308, "", "x", "1_000", "NaN", "-1",
    [], [None], {}, {"x": None}, [[1]],
]  # fmt: skip
WRONG_TEXT = ["", "NaN", "1_000", "-1", "$", "$inf", "1e400", "<b>", "\u2028", "x" * 300]
TEXT_NODE = re.compile(r">([^<]+)<")


def _answers_of(source: Source) -> list[tuple[str, bytes]]:
    """(fixture name, the payload `parse` gets) of each recorded answer of the source."""
    found = []
    for path in sorted(FIXTURES.glob(f"{source.name}_*")):
        if path.is_dir():
            handler = replay_handler(source)(path)
            creds = Credentials("replay") if source.key_required else None
            with httpx.Client(transport=httpx.MockTransport(handler)) as client:
                found.append((path.name, source.fetch(client, creds)))
        else:
            found.append((path.name, path.read_bytes()))
    return found


CASES = [
    pytest.param(name, fixture, payload, id=f"{name}-{fixture}")
    for name, source in scrapers.sources().items()
    for fixture, payload in _answers_of(source)
]


def test_every_provider_has_recorded_answers_to_break():
    assert {name for name, *_ in (case.values for case in CASES)} == set(scrapers.sources())


def _nested(value: Any) -> Any:
    """A JSON document with the JSON documents held in its strings decoded (marked)."""
    if isinstance(value, dict):
        return {k: _nested(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nested(v) for v in value]
    if isinstance(value, str) and value[:1] in "{[" and len(value) > 1:
        try:
            return {NESTED: _nested(json.loads(value))}
        except ValueError:
            return value
    return value


def _flat(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {NESTED}:
            return json.dumps(_flat(value[NESTED]))
        return {k: _flat(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_flat(v) for v in value]
    return value


def _paths(value: Any, path: tuple[Any, ...], out: list[tuple[Any, ...]]) -> None:
    if len(out) >= MAX_NODES:
        return
    children = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()  # fmt: skip
    for key, child in children:
        if key == NESTED:
            _paths(child, (*path, key), out)
            continue
        out.append((*path, key))
        _paths(child, (*path, key), out)


@cache
def _tree(payload: bytes) -> tuple[Any, list[tuple[Any, ...]]] | None:
    try:
        tree = _nested(json.loads(payload))
    except ValueError:
        return None
    paths: list[tuple[Any, ...]] = []
    _paths(tree, (), paths)
    return tree, paths


def _replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(tree))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


def _broken(payload: bytes, data: st.DataObject) -> bytes:
    parsed = _tree(payload)
    if parsed is not None and parsed[1]:
        tree, paths = parsed
        for _ in range(data.draw(st.integers(1, 3), label="replacements")):
            path = paths[data.draw(st.integers(0, len(paths) - 1), label="node")]
            try:
                tree = _replaced(tree, path, data.draw(st.sampled_from(WRONG_JSON)))
            except (KeyError, IndexError, TypeError):
                continue  # an earlier replacement removed this node
        return json.dumps(_flat(tree)).encode()
    text = payload.decode("utf-8", errors="replace")
    nodes = [m.span(1) for m in TEXT_NODE.finditer(text)][:MAX_NODES]
    for _ in range(data.draw(st.integers(1, 3), label="replacements")):
        if not nodes:
            break
        start, end = nodes[data.draw(st.integers(0, len(nodes) - 1), label="node")]
        wrong = data.draw(st.sampled_from(WRONG_TEXT))
        text = text[:start] + wrong.ljust(end - start)[: max(end - start, len(wrong))] + text[end:]
        nodes = [m.span(1) for m in TEXT_NODE.finditer(text)][:MAX_NODES]
    return text.encode()


def _parse(name: str, payload: bytes) -> object:
    rates = scrapers.RATE_SOURCES.get(name)
    if rates is not None:
        return rates.parse_rates(payload)
    return scrapers.PROVIDERS[name].parse(payload, OBSERVED_AT)


@pytest.mark.parametrize(("name", "fixture", "payload"), CASES)
@settings(
    max_examples=EXAMPLES_PER_ANSWER, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
@given(data=st.data())
def test_wrong_types_in_a_recorded_answer_give_rejects_or_a_payload_error(
    name, fixture, payload, data
):
    broken = _broken(payload, data)
    try:
        result = _parse(name, broken)
    except ProviderPayloadError:
        return
    assert isinstance(result, ParseResult | list)


def test_one_malformed_aws_record_is_rejected_and_the_others_read():
    body = json.loads((FIXTURES / "aws_spot.json").read_bytes())
    body["config"]["regions"][0]["instanceTypes"] = "broken"
    body["config"]["regions"][1]["instanceTypes"][0]["sizes"][0] = 7
    result = scrapers.PROVIDERS["aws"].parse(json.dumps(body).encode(), OBSERVED_AT)
    reasons = [r.reason for r in result.rejects]
    assert any("instanceTypes is not a list" in reason for reason in reasons), reasons
    assert any("no instance type" in reason for reason in reasons), reasons
    assert result.offers  # the other regions' offers are read


def test_a_foreign_answer_among_awss_answers_is_one_reject(tmp_path: Path):
    answers = {"answers": [(FIXTURES / "aws_spot.json").read_text(), "<html>busy</html>"]}
    result = scrapers.PROVIDERS["aws"].parse(json.dumps(answers).encode(), OBSERVED_AT)
    assert result.offers
    assert [r.reason[:9] for r in result.rejects if "not JSON" in r.reason] == ["answer 2:"]
