"""What every `gpuprices` command shares: consoles, the error edge, and the settings options."""

from __future__ import annotations

import csv
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from pipeline.errors import PipelineError
from pipeline.redaction import install_secret_masking
from pipeline.settings import Settings
from pipeline.timeparse import TimeParseError, parse_duration, parse_time_or_ago
from scrapers import ProviderError
from warehouse import Warehouse, WarehouseError

__all__ = [
    "ConfigOption",
    "DbOption",
    "SinceOption",
    "err",
    "load_settings",
    "open_existing",
    "option_duration",
    "option_time",
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
SinceOption = Annotated[
    str | None,
    typer.Option(help="Start: a date (2026-01-01), an ISO 8601 time or a duration ago (7d, 24h)"),
]
"""A command's `--since`, read by `option_time`."""


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
            raise typer.Exit(getattr(exc, "exit_code", 1)) from None

    return wrapper


def load_settings(db: Path | None, config: Path | None = None, **overrides: object) -> Settings:
    """Settings from the environment and `--config`, with the command's own options on top."""
    given = {k: v for k, v in {"db": db, **overrides}.items() if v is not None}
    if db is not None:
        given["warehouse"] = None  # an explicit --db file wins over GPUPRICES_WAREHOUSE
    install_secret_masking()  # before anything can fail: the settings' own errors are logged too
    settings = Settings.load(config, **given)
    install_secret_masking(settings)  # and the keys of the settings file
    return settings


def open_existing(settings: Settings) -> Warehouse:
    """The warehouse a read command reads: never created here, so a mistyped `--db` is an error
    (and leaves no folder or empty database behind)."""
    target = settings.warehouse_target
    if isinstance(target, Path) and str(target) != ":memory:" and not target.is_file():
        raise PipelineError(
            f"No database at {target}: check --db / GPUPRICES_DB "
            "(read commands never create one; `gpuprices collect` does)"
        )
    return Warehouse.open(target)


def option_time(value: str | None, option: str) -> datetime | None:
    """A time option, read by the one shared parser: an ISO 8601 date-time or date, or a
    duration meaning that long ago (`7d`, `2h`, `PT30M`); a usage error if neither."""
    if value is None:
        return None
    try:
        return parse_time_or_ago(value, datetime.now(UTC))
    except TimeParseError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def option_duration(value: str, option: str) -> timedelta:
    """A duration option (90s, 30m, 2h, 7d, PT2H), read by the one shared parser."""
    try:
        return parse_duration(value)
    except TimeParseError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""OWASP's CSV injection rule: a text cell starting so is a formula to a spreadsheet."""


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: Any) -> Any:
    """`value`, with a leading `'` when it is text a spreadsheet would run (numbers kept)."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _number(value):
        return "'" + value
    return value


class SafeCsvWriter:
    """`csv.writer` / `csv.DictWriter` whose rows have their cells neutralized (`csv_cell`)."""

    def __init__(self, stream: IO[str], fieldnames: Sequence[str] | None = None) -> None:
        self._dict = csv.DictWriter(stream, fieldnames, lineterminator="\n") if fieldnames else None
        self._list = csv.writer(stream, lineterminator="\n")

    def writeheader(self) -> None:
        assert self._dict is not None, "a header needs fieldnames"
        self._dict.writeheader()

    def writerow(self, row: Iterable[Any] | Mapping[str, Any]) -> None:
        if isinstance(row, Mapping):
            assert self._dict is not None, "a mapping row needs fieldnames"
            self._dict.writerow({k: csv_cell(v) for k, v in row.items()})
        else:
            self._list.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any] | Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)
