"""How routes read their query strings, and the bounds they share beyond the filter scope.

Every route of the API takes its query parameters as one pydantic model, FastAPI's query
parameter models (`Annotated[Model, Query()]`, FastAPI >= 0.115): FastAPI documents the
model's fields as the route's parameters and validates the query string against the model in
one call; list fields (tuple or list) take every value given, any other field the last one. A
route that takes no parameter declares `dependencies=[NO_QUERY]`. Each model refuses a name it
does not take with a 422 naming it and the names it takes (`known_names_only`): a misspelt
filter (`gpus=H100`) is never silently ignored.

`/offers` and the offer export, the questions asked most, read theirs with pydantic alone
(`read_query`: one `model_validate`): FastAPI reads a query model field by field, inspecting each
field's type again on every request, which for `OffersParams`' 27 fields outweighed the rest of
answering a question (bench/offers_stages.py's `read` stage measures it). FastAPI still documents
the model, its parameters made by FastAPI's own `get_openapi` (`documented_query`, the route's
`openapi_extra`). `/offers` calls its reader in the route itself rather than as a dependency:
FastAPI's solving of one more dependency per request cost as much as the validation. Both read a
query string alike: a list field takes every value given, any other field the last one; a
refusal is FastAPI's 422.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Annotated, Any, TypeVar, get_args, get_origin

from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from pipeline.market.scope import MAX_NAME_CHARS, MAX_NAMES, Name, front_end_model

__all__ = [
    "MAX_NAME_CHARS",
    "MAX_NAMES",
    "MAX_OFFERS_PAGE",
    "NO_QUERY",
    "Name",
    "NoQuery",
    "QueryModel",
    "documented_query",
    "known_names_only",
    "read_query",
    "revalidated",
    "scope_query",
]

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])

MAX_OFFERS_PAGE = 10_000
"""Most offers one JSON page of `/offers` holds; exports and NDJSON are not capped."""

_UNKNOWN_LISTED = 20  # errors listed at most, however many unknown names a query sends
_NAME_CHARS = 64  # an unknown name is quoted this far at most


@functools.cache
def _known_names(model: type[BaseModel]) -> tuple[frozenset[str], str]:
    """The names `model` takes in a query string (its aliases), and the hint that lists them."""
    known = sorted(field.alias or name for name, field in model.model_fields.items())
    return frozenset(known), f"known: {', '.join(known)}" if known else "this route takes none"


def known_names_only(cls: type[M], data: Any, handler: ModelWrapValidatorHandler[M]) -> M:
    """A query model's wrap validator: each name the model does not take (by its API name, the
    alias) is an error at that name saying which names the route takes."""
    if isinstance(data, Mapping):
        known, hint = _known_names(cls)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "extra_forbidden",
                            "Unknown query parameter '{name}'; {hint}",
                            {"name": name[:_NAME_CHARS], "hint": hint},
                        ),
                        loc=(name[:_NAME_CHARS],),
                        input=data[name],
                    )
                    for name in unknown[:_UNKNOWN_LISTED]
                ],
            )
    return handler(data)


class QueryModel(BaseModel):
    """The base of a route's own query model: other names are refused (`known_names_only`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    _known_names_only = model_validator(mode="wrap")(known_names_only)


class NoQuery(QueryModel):
    """The query of a route that takes no parameter: any name is a 422."""


def _no_query(_: Annotated[NoQuery, Query()]) -> None:
    """Refuses any query parameter (`NoQuery`)."""


NO_QUERY = Depends(_no_query)
"""`dependencies=[NO_QUERY]`: the route takes no query parameter and says so when given one."""


def scope_query(model: type[M], honoured: Collection[str], name: str) -> Callable[..., M]:
    """A dependency that hands a route `model` (an `OfferScope` subclass of the pipeline) read
    from the query string by a front end that applies only the `honoured` scope fields.

    Its query model, `name`, is `model` without the other scope fields (`front_end_model`),
    unknown names refused (`known_names_only`): FastAPI documents and validates it as the
    dependency's one parameter, and the dependency turns it into `model` (`revalidated`).
    """
    params = front_end_model(
        model,
        honoured,
        name,
        validators={"known_names_only": model_validator(mode="wrap")(known_names_only)},
    )

    def read(query: BaseModel) -> M:
        return revalidated(model, query)

    return _taking_query(read, params)


def _taking_query(function: F, model: type[BaseModel]) -> F:
    """`function` declaring one parameter, `query: Annotated[model, Query()]`, for FastAPI to
    read: `model` is made at run time, so no annotation written in the source can name it."""
    parameter = inspect.Parameter(
        "query", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[model, Query()]
    )
    function.__signature__ = inspect.Signature([parameter])  # type: ignore[attr-defined]  # inspect.signature honours __signature__; typeshed omits it
    return function


def _takes_many(annotation: Any) -> bool:
    """Whether a field of this type takes every value of its name (a tuple or list field)."""
    if get_origin(annotation) in (tuple, list):
        return True
    return any(_takes_many(arg) for arg in get_args(annotation) if arg is not type(None))


def read_query(model: type[M]) -> Callable[[Request], Awaitable[M]]:
    """A reader of the query string into `model` with one `model_validate` (see the module
    docstring): a dependency, or called by a route; a refusal is a 422 naming the parameter, as
    FastAPI's."""
    many = frozenset(
        field.alias or name
        for name, field in model.model_fields.items()
        if _takes_many(field.annotation)
    )

    async def read(request: Request) -> M:
        params = request.query_params
        data = {name: params.getlist(name) if name in many else params[name] for name in params}
        return _validated(model, data)

    return read


def documented_query(model: type[BaseModel]) -> dict[str, Any]:
    """A route's `openapi_extra` documenting `model` as its query parameters, the parameters
    FastAPI itself makes of `Annotated[model, Query()]` (schemas it would refer to inlined)."""

    def endpoint(query: Any) -> None: ...

    route = APIRoute("/", _taking_query(endpoint, model), methods=["GET"])
    schema = get_openapi(title="", version="", routes=[route])
    components = schema.get("components", {}).get("schemas", {})

    def inlined(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/components/schemas/"):
                return inlined(components[ref.rsplit("/", 1)[1]])
            return {key: inlined(value) for key, value in node.items()}
        return [inlined(item) for item in node] if isinstance(node, list) else node

    return {"parameters": inlined(schema["paths"]["/"]["get"]["parameters"])}


def _validated(model: type[M], data: Any) -> M:
    """`data` as `model`; a refusal is a 422 naming the query parameter, never a 500."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


def revalidated(model: type[M], params: BaseModel) -> M:
    """`params` (a front end's query model) as the pipeline's `model`; a value the front end's
    model let through but `model` refuses is a 422 naming the parameter, never a 500."""
    return _validated(model, params.model_dump(exclude_unset=True))
