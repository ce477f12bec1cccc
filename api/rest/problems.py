"""One error shape for every 4xx and 5xx: RFC 9457 problem details (`application/problem+json`).

    {"type": "about:blank", "title": "Unprocessable Content", "status": 422,
     "detail": "max_age: '10^30' is not a duration such as 90s, 30m, 2h, 7d or ISO 8601 PT2H",
     "errors": [{"location": "query", "field": "max_age", "detail": "..."}]}

`detail` is always one readable sentence; field errors go in `errors`. The handlers never echo a
rejected input back, so a NaN or a 10 MB string in a body cannot break the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

import httpx
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from pipeline.errors import PipelineError, WorkloadError
from warehouse import DatabaseLockedError, WarehouseError

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "install_problem_handlers",
    "problem_detail",
    "problem_response",
    "problems",
]

logger = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
MAX_DETAIL_CHARS = 1000
"""Longest `detail` answered (a sentence saying what to fix is far shorter)."""
_FIELD_ERRORS_SHOWN = 3  # in `detail`; `errors` lists them all
_DESCRIPTIONS = {
    400: "The body cannot be read as JSON text",
    401: "Missing or wrong API key",
    404: "No such resource",
    413: "Request body over the route's limit (the limit is in `detail`)",
    422: "Invalid request: `detail` says what to fix, `errors` lists each field",
    500: "Internal error (a bug; the server log has the trace)",
    503: "The database is unavailable or locked",
}


class FieldError(BaseModel):
    location: str = Field(description="body, query, path or header")
    field: str = Field(description="Dotted name of the field, empty for the whole body")
    detail: str


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field("about:blank", description="about:blank: the status says it all")
    title: str = Field(description="The HTTP status phrase")
    status: int
    detail: str = Field(description="What went wrong and what to fix, as a sentence")
    errors: list[FieldError] | None = Field(None, description="One entry per invalid field")


def problem_detail(response: httpx.Response) -> str | None:
    """The `detail` of a problem-details answer, as a client of this API reads it (the CLI's
    `--api`, the MCP tools); None when the body is not JSON or states none."""
    try:
        body = response.json()
    except ValueError:
        return None
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail) if detail else None


def problem_response(
    status: int,
    detail: str,
    errors: Sequence[FieldError] | None = None,
    headers: Mapping[str, str] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> Response:
    """A problem-details answer; `extensions` are extra members (RFC 9457 section 3.2). A
    `detail` past `MAX_DETAIL_CHARS` is cut: no message repeats a huge input whole."""
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
    body: dict[str, Any] = {
        **(extensions or {}),
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if errors:
        body["errors"] = [e.model_dump() for e in errors]
    return Response(
        orjson.dumps(body), status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


def _field_part(part: object) -> bool:
    """Whether a location part names a field (not a union member such as `constrained-int`)."""
    text = str(part)
    return isinstance(part, int) or not ("-" in text or "[" in text or text in _TYPE_TAGS)


_TYPE_TAGS = frozenset({"int", "str", "float", "bool", "list", "dict", "none"})


def _field_error(error: Mapping[str, Any]) -> FieldError:
    loc = [str(part) for part in error.get("loc", ()) if _field_part(part)]
    location = loc[0] if loc and loc[0] in ("body", "query", "path", "header", "cookie") else ""
    field = ".".join(loc[1:] if location else loc)
    message = str(error.get("msg", "invalid"))
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return FieldError(location=location or "body", field=field, detail=message)


def validation_detail(errors: Sequence[FieldError]) -> str:
    parts = [f"{e.field}: {e.detail}" if e.field else e.detail for e in errors]
    shown = "; ".join(parts[:_FIELD_ERRORS_SHOWN])
    more = len(parts) - _FIELD_ERRORS_SHOWN
    return shown + (f" (and {more} more in errors)" if more > 0 else "")


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not read the body
        detail = "The request body cannot be read: send JSON text (UTF-8)"
    return problem_response(exc.status_code, detail, headers=exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [_field_error(e) for e in exc.errors()]
    return problem_response(422, validation_detail(errors), errors)


async def _pipeline_error(request: Request, exc: Exception) -> Response:
    errors = None
    location = "query" if request.method in ("GET", "HEAD") else "body"
    if isinstance(exc, WorkloadError):
        errors = [FieldError(location=location, field=exc.field, detail=exc.detail)]
    elif (field := getattr(exc, "field", None)) is not None:
        errors = [FieldError(location=location, field=str(field), detail=str(exc))]
    return problem_response(422, str(exc), errors)


async def _warehouse_error(_request: Request, exc: Exception) -> Response:
    """503 without the driver's words: they name the database's path or host (the log has them)."""
    logger.warning("database error: %s", exc)
    if isinstance(exc, DatabaseLockedError):
        return problem_response(503, "The database is in use by another process; retry shortly")
    return problem_response(503, "The database cannot answer now; the server log has the details")


async def _server_error(_request: Request, exc: Exception) -> Response:
    logger.error("unhandled error", exc_info=exc)
    return problem_response(500, "Internal error; the server log has the details")


def install_problem_handlers(app: FastAPI) -> None:
    """Every error the app answers, as problem details; and `/openapi.json` says so."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(PipelineError, _pipeline_error)
    app.add_exception_handler(WarehouseError, _warehouse_error)
    app.add_exception_handler(Exception, _server_error)
    _document(app)


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route or router that can answer these statuses with a problem."""
    return {
        status: {
            "description": _DESCRIPTIONS.get(status, HTTPStatus(status).phrase),
            "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


_EVERY_ROUTE = (422, 500, 503)


def _document(app: FastAPI) -> None:
    """Wrap `app.openapi`: the Problem schema, and each operation's problem statuses (every
    route: 422, 500, 503; with a body: 400, 413) in place of FastAPI's own 422 shape."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        defs = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(defs.pop("$defs", {}))
        components["Problem"] = defs
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                _add_problems(operation)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend it


def _add_problems(operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    with_body = (*_EVERY_ROUTE, 400, 413)
    statuses: Iterable[int] = with_body if "requestBody" in operation else _EVERY_ROUTE
    for status, documented in problems(*statuses).items():
        key = str(status)
        if status == 422 or key not in responses:
            responses[key] = documented
        else:  # e.g. /readyz's 503 body: keep it, and add the problem shape beside it
            responses[key].setdefault("content", {}).update(documented["content"])
