"""CLI options built from the filter scope: a command names the scope fields it honours and
receives one `OfferScope`; the options' names, types and help come from the scope's fields."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Collection
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from api.cli.common import print_error
from pipeline.market.scope import MORE_FLAGS, OfferScope

__all__ = ["scope_options", "validation_line"]

R = TypeVar("R")


def _flag(name: str, field: FieldInfo) -> str:
    return "--" + (field.alias or name).replace("_", "-")


def _cli_type(annotation: Any) -> Any:
    """The option's type: lists for repeated values, plain strings for closed string sets."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    inner = args[0] if len(args) == 1 else annotation
    if typing.get_origin(inner) is Annotated:  # a constrained type (`Name`): pydantic checks it
        inner = typing.get_args(inner)[0]
    if typing.get_origin(inner) is tuple:
        return list[str] | None
    if typing.get_origin(inner) is typing.Literal:
        return str | None
    if inner is bool:
        return bool
    return inner | None


def _option(name: str, field: FieldInfo) -> inspect.Parameter:
    flags = (_flag(name, field), *MORE_FLAGS.get(name, ()))
    kind = _cli_type(field.annotation)
    option = typer.Option(*flags, help=field.description)
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=False if kind is bool else None,
        annotation=Annotated[kind, option],
    )


def validation_line(exc: ValidationError) -> str:
    """One readable line for the first problem pydantic found."""
    error = exc.errors()[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    if not error["loc"]:  # a check over several fields says which itself (gpu=H100:x)
        return message
    where = ".".join(str(part) for part in error["loc"])
    fields = OfferScope.model_fields
    flag = _flag(where, fields[where]) if where in fields else f"--{where.replace('_', '-')}"
    return f"{flag}: {message}"


def scope_options(
    honoured: Collection[str],
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command one option per honoured scope field and call it with `scope=OfferScope`.

    A bad value is one red line and exit 2 (a usage error).
    """
    names = [name for name in OfferScope.model_fields if name in honoured]

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        own = inspect.signature(command, eval_str=True)
        kept = [p for p in own.parameters.values() if p.name != "scope"]
        added = [_option(name, OfferScope.model_fields[name]) for name in names]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            given = {name: kwargs.pop(name) for name in names}
            values = {k: v for k, v in given.items() if not (v is None or v is False or v == [])}
            try:
                scope = OfferScope.model_validate(values)
            except ValidationError as exc:
                print_error(ValueError(validation_line(exc)))
                raise typer.Exit(2) from None
            return command(*args, scope=scope, **kwargs)

        signature = own.replace(parameters=[*kept, *added])
        wrapper.__signature__ = signature  # type: ignore[attr-defined]  # inspect.signature reads it
        wrapper.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        del wrapper.__wrapped__  # typer reads the signature above, not the command's own
        return wrapper

    return decorate
