"""The observation commands: `history` (how prices moved), `export` (raw rows as Parquet) and
`prune` (the retention window)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

import api.cli.history as cli_history
from api.cli.common import (
    ConfigOption,
    DbOption,
    SinceOption,
    err,
    load_settings,
    option_time,
    user_errors,
)
from api.cli.offers import FormatOption, OutputFormat
from api.cli.remote import ApiOption, remote_for
from api.cli.scope import scope_options
from pipeline.errors import PipelineError
from pipeline.market.history import HISTORY_SCOPE, HistoryQuery
from pipeline.market.scope import OfferScope

__all__ = ["export_command", "history_command", "prune_cmd"]


class Interval(StrEnum):
    H1 = "1h"
    H6 = "6h"
    D1 = "1d"
    W1 = "1w"


@user_errors
@scope_options(HISTORY_SCOPE)
def history_command(
    scope: OfferScope,
    interval: Annotated[Interval, typer.Option(help="Bucket size")] = Interval.H1,
    since: SinceOption = None,
    until: Annotated[
        str | None, typer.Option(help="End: a date, an ISO time or 2h (ago) [default: now]")
    ] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """How prices moved: min/median/max per GPU-hour per bucket, with a sparkline per series."""
    if scope.gpu is None:
        raise PipelineError("history needs --gpu: an id (A100-80GB), a family (A100) or a spelling")
    query = HistoryQuery(
        **scope.model_dump(exclude={"gpu"}),
        gpu=scope.gpu,
        interval=interval.value,
        since=option_time(since, "--since"),
        until=option_time(until, "--until"),
    )
    settings = load_settings(db, config)
    cli_history.history(settings, query, fmt.value, remote_for(settings, api))


@user_errors
def export_command(
    out: Annotated[Path, typer.Option("--out", help="Directory for date=/provider= Parquet")],
    since: Annotated[str, typer.Option(help="Start (inclusive): a date, an ISO time or 7d (ago)")],
    until: Annotated[
        str | None, typer.Option(help="End (exclusive): a date, an ISO time or 2h [default: now]")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Raw observations in a range as Hive-partitioned Parquet (date=YYYY-MM-DD/provider=...)."""
    settings = load_settings(db, config)
    rows = cli_history.export(settings, since, until, out, remote_for(settings, api))
    err.print(f"exported {rows} observations to {out}")


@user_errors
def prune_cmd(db: DbOption = None, config: ConfigOption = None) -> None:
    """Delete raw observations older than the retention window (summaries are kept)."""
    settings = load_settings(db, config)
    running = remote_for(settings, None)
    if running is not None:
        raise PipelineError(
            f"the server at {running.url} holds this database and prunes it daily by itself"
        )
    deleted = cli_history.prune_command(settings)
    err.print(", ".join(f"{table}: {n} deleted" for table, n in deleted.items()))
