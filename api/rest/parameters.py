"""Bounds and parameters the routes share beyond the filter scope (`pipeline.market.scope`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_args, get_origin
from urllib.parse import unquote_plus

from fastapi import Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.datastructures import QueryParams

from pipeline.market.scope import MAX_NAME_CHARS, MAX_NAMES, Name
from pipeline.timeparse import Duration

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_OFFERS_PAGE",
    "MaxAgeParam",
    "Name",
    "Names",
    "QueryModel",
    "query_model",
    "query_pairs",
    "revalidated",
]

M = TypeVar("M", bound=BaseModel)

MAX_OFFERS_PAGE = 10_000
"""Most offers one JSON page of `/offers` holds; exports and NDJSON are not capped."""

Names = Annotated[list[Name], Query(max_length=MAX_NAMES)]
MaxAgeParam = Annotated[
    Duration | None,
    Query(description="Leave out providers whose snapshot is older: 30m, 2h, PT2H (max 10 years)"),
]


def _inlined(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with its `$ref`s to `$defs` replaced by the definitions themselves."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inlined(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inlined(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inlined(v, defs) for v in schema]
    return schema


def revalidated(model: type[M], params: BaseModel) -> M:
    """`params` (a front end's query model) as the pipeline's `model`; a value the front end's
    model let through but `model` refuses is a 422 naming the parameter, never a 500."""
    try:
        return model.model_validate(params.model_dump(exclude_unset=True))
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


def query_pairs(raw: bytes) -> list[tuple[str, str]]:
    """The (name, value) pairs of a raw query string, as `QueryParams` reads them (latin-1
    bytes, `+` and %-escapes decoded as UTF-8, blank values kept), in a third of its time."""
    pairs = []
    for part in raw.decode("latin-1").split("&"):
        if part:
            name, _, value = part.partition("=")
            if "%" in part or "+" in part:
                name, value = unquote_plus(name), unquote_plus(value)
            pairs.append((name, value))
    return pairs


@dataclass(frozen=True, slots=True)
class QueryModel(Generic[M]):
    """How a route reads `model` from its query string (see `query_model`)."""

    parse: Callable[[QueryParams], M]
    """The model from the parameters; `ValidationError` when they do not make one."""
    parse_raw: Callable[[bytes, dict[str, Any]], M | None]
    """The model from a raw query string (ASGI's `query_string`) and the values of the names
    it does not give, None when a name is not the model's; `ValidationError` when the values do
    not make one. `parse` without building a `QueryParams` (a third of the parsing time of a
    search)."""
    read: Callable[[Request], M]
    """The FastAPI dependency: `parse`, with a 422 naming the parameter otherwise."""
    openapi: dict[str, Any]
    """The route's `openapi_extra`: the parameters, documented."""


def query_model(model: type[M]) -> QueryModel[M]:
    """Read `model` from the query string in one pydantic call, and document its parameters.

    FastAPI's own `Annotated[Model, Query()]` inspects every field's annotation on each request:
    about 1 ms for `/offers`' thirty fields, half of a whole answer. Here a list field (tuple or
    list) takes every value given; any other field the last one, as FastAPI does. Unknown names
    are refused by the model (`extra="forbid"`) and, before it, by `known_query_only`, which
    reads the names from the documented parameters.
    """
    lists = frozenset(  # fields that take every value given
        field.alias or name
        for name, field in model.model_fields.items()
        for a in (field.annotation, *get_args(field.annotation))
        if get_origin(a) in (tuple, list)
    )

    def parse(params: QueryParams) -> M:
        return model.model_validate(
            {k: params.getlist(k) if k in lists else params[k] for k in params}
        )

    def parse_raw(raw: bytes, defaults: dict[str, Any]) -> M | None:
        names = documented  # the names the route takes (`known_query_only`)
        values: dict[str, Any] = dict(defaults)
        for name, value in query_pairs(raw):
            if name not in names:
                return None
            if name in lists:
                values.setdefault(name, []).append(value)
            else:
                values[name] = value
        return model.model_validate(values)

    def read(request: Request) -> M:
        try:
            return parse(request.query_params)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
            ) from None

    schema = model.model_json_schema(by_alias=True)
    documented = frozenset(schema["properties"])
    defs = schema.get("$defs", {})
    required = set(schema.get("required", ()))
    parameters = []
    for name, prop in schema["properties"].items():
        prop = _inlined(prop, defs)
        description = prop.pop("description", None)
        prop.pop("title", None)
        parameter = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return QueryModel(parse, parse_raw, read, {"parameters": parameters})
