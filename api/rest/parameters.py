"""Bounds and parameters the routes share beyond the filter scope (`pipeline.market.scope`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar, get_args, get_origin

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


@dataclass(frozen=True, slots=True)
class QueryModel(Generic[M]):
    """How a route reads `model` from its query string (see `query_model`)."""

    parse: Callable[[QueryParams], M]
    """The model from the parameters; `ValidationError` when they do not make one."""
    read: Callable[[Request], Awaitable[M]]
    """The FastAPI dependency: `parse`, with a 422 naming the parameter otherwise."""
    openapi: dict[str, Any]
    """The route's `openapi_extra`: the parameters, documented."""


def query_model(model: type[M]) -> QueryModel[M]:
    """Read `model` from the query string in one pydantic call, and document its parameters.

    Starlette reads the query string (`request.query_params`) and the model validates it in one
    call: FastAPI's own `Annotated[Model, Query()]` inspects every field's annotation on each
    request, too slow for `/offers`' thirty fields (bench/load.py). A list field (tuple or
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

    async def read(request: Request) -> M:  # async: a sync dependency costs a thread hop
        try:
            return parse(request.query_params)
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
            ) from None

    schema = model.model_json_schema(by_alias=True)
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
    return QueryModel(parse, read, {"parameters": parameters})
