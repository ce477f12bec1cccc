"""How routes read their query strings, and the bounds they share beyond the filter scope.

Every route of the API takes its query parameters as one pydantic model, FastAPI's query
parameter models (`Annotated[Model, Query()]`, FastAPI >= 0.115): FastAPI documents the
model's fields as the route's parameters and validates the query string against the model in
one call; list fields (tuple or list) take every value given, any other field the last one. A
route that takes no parameter declares `dependencies=[NO_QUERY]`. Each model refuses a name it
does not take with a 422 naming it and the names it takes (`known_names_only`): a misspelt
filter (`gpus=H100`) is never silently ignored.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query
from fastapi.exceptions import RequestValidationError
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
    "known_names_only",
    "revalidated",
    "scope_query",
]

M = TypeVar("M", bound=BaseModel)

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

    parameter = inspect.Parameter(
        "query", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[params, Query()]
    )  # FastAPI reads the signature: `params` is made here, no annotation can name it
    read.__signature__ = inspect.Signature([parameter])  # type: ignore[attr-defined]  # inspect.signature honours __signature__; typeshed omits it
    return read


def revalidated(model: type[M], params: BaseModel) -> M:
    """`params` (a front end's query model) as the pipeline's `model`; a value the front end's
    model let through but `model` refuses is a 422 naming the parameter, never a 500."""
    try:
        return model.model_validate(params.model_dump(exclude_unset=True))
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("query", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None
