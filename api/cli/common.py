"""What every `gpuprices` command shares: consoles, the error edge, and the settings options."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from pipeline.errors import PipelineError
from pipeline.settings import Settings
from scrapers import ProviderError
from warehouse import WarehouseError

__all__ = [
    "ConfigOption",
    "ContinentOption",
    "CountryOption",
    "DbOption",
    "JurisdictionOption",
    "err",
    "load_settings",
    "out",
    "print_error",
    "user_errors",
]

out = Console()
err = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="DuckDB file [env: GPUPRICES_DB; default data/gpuprices.duckdb]"),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="TOML settings file [env: GPUPRICES_CONFIG]"),
]
CountryOption = Annotated[
    list[str] | None,
    typer.Option("--country", help="ISO 3166-1 alpha-2 code(s), repeatable or DE,FR"),
]
ContinentOption = Annotated[str | None, typer.Option("--continent", help="e.g. Europe")]
JurisdictionOption = Annotated[
    str | None, typer.Option("--jurisdiction", help="eea or eu (unknown country never matches)")
]


def print_error(exc: Exception) -> None:
    """One red line on stderr; the message is text, never rich markup (`[lake]` stays)."""
    err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Our own errors become one red line and exit 1; anything else is a bug and keeps its trace."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (PipelineError, WarehouseError, ProviderError) as exc:
            print_error(exc)
            raise typer.Exit(1) from None

    return wrapper


def load_settings(db: Path | None, config: Path | None = None, **overrides: object) -> Settings:
    """Settings from the environment and `--config`, with the command's own options on top."""
    given = {k: v for k, v in {"db": db, **overrides}.items() if v is not None}
    if db is not None:
        given["warehouse"] = None  # an explicit --db file wins over GPUPRICES_WAREHOUSE
    return Settings.load(config, **given)
