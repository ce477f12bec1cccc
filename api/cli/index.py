"""`gpuprices index` and `gpuprices market`: thin commands over the functions `/index` and
`/market` call, printing the same response models."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from api.cli.common import (
    ConfigOption,
    DbOption,
    SafeCsvWriter,
    load_settings,
    option_time,
    user_errors,
)
from api.cli.history import sparkline
from api.cli.offers import OutputFormat, print_json
from api.cli.remote import ApiOption, answered, query_params
from api.cli.scope import scope_options, validation_line
from api.rest.schemas_index import IndexOut, MarketOut
from pipeline.errors import PipelineError
from pipeline.market.index import INDEX_SCOPE, IndexQuery, index_series
from pipeline.market.outlook import MARKET_SCOPE, MarketQuery, market_outlook
from pipeline.market.scope import OfferScope

__all__ = ["index_command", "market_command"]


class IndexInterval(StrEnum):
    H1 = "1h"
    D1 = "1d"


FormatOption = Annotated[OutputFormat, typer.Option("--format", help="table, json or csv")]


def _need_gpu(scope: OfferScope, command: str) -> str:
    if scope.gpu is None:
        raise PipelineError(f"{command} needs --gpu: an id (H100-80GB) or a spelling")
    return scope.gpu


def print_index(data: dict[str, Any], fmt: OutputFormat) -> None:
    """The `/index` body (as `IndexOut` dumps it) as JSON, CSV rows or a table."""
    if fmt is OutputFormat.JSON:
        print_json(data)
        return
    if fmt is OutputFormat.CSV:
        writer = SafeCsvWriter(sys.stdout)
        writer.writerow(["gpu", "pricing", "form_factor", "t", "value", "providers"])
        for s in data["series"]:
            for p in s["points"]:
                row = [s["gpu"], s["pricing"], s["form_factor"] or "", p["t"], p["value"]]
                writer.writerow([*row, p["providers"]])
        return
    table = Table(
        title=f"GPU price index (methodology {data['methodology']}), USD per GPU-hour, "
        f"{data['interval']} buckets, {data['since']} .. {data['until']}"
    )
    for column in ("gpu", "pricing", "points", "latest", "providers", "min", "max", "trend"):
        table.add_column(column, no_wrap=column != "trend")
    for s in data["series"]:
        values = [p["value"] for p in s["points"]]
        last = s["points"][-1] if s["points"] else None
        table.add_row(
            s["gpu"],
            s["pricing"],
            str(len(values)),
            f"{last['value']:.4f}" if last else "-",
            str(last["providers"]) if last else "-",
            f"{min(values):.4f}" if values else "-",
            f"{max(values):.4f}" if values else "-",
            sparkline(values),
        )
    Console().print(table)


@user_errors
@scope_options(INDEX_SCOPE)
def index_command(
    scope: OfferScope,
    interval: Annotated[IndexInterval, typer.Option(help="Bucket size (UTC)")] = IndexInterval.D1,
    since: Annotated[str | None, typer.Option(help="ISO 8601 start")] = None,
    until: Annotated[str | None, typer.Option(help="ISO 8601 end (default now)")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """The GPU price index (methodology v1): per bucket, the median of each provider's cheapest
    available price per GPU-hour in its last good snapshot."""
    query = IndexQuery(
        **scope.model_dump(exclude={"gpu"}),
        gpu=_need_gpu(scope, "index"),
        interval=interval.value,
        since=option_time(since, "--since"),
        until=option_time(until, "--until"),
    )
    found = answered(
        load_settings(db, config),
        api,
        lambda remote: remote.get("/index", query_params(query)),
        lambda warehouse: index_series(warehouse, query, datetime.now(UTC)),
    )
    body = IndexOut.model_validate(found)
    print_index(body.model_dump(mode="json"), fmt)


def print_market(data: dict[str, Any], fmt: OutputFormat) -> None:
    """The `/market` body (as `MarketOut` dumps it) as JSON, one CSV row or a table."""
    if fmt is OutputFormat.JSON:
        print_json(data)
        return
    flat = {k: v for k, v in data.items() if k != "below"}
    flat.update({f"below_{b['price']}": b["share"] for b in data["below"]})
    if fmt is OutputFormat.CSV:
        writer = SafeCsvWriter(sys.stdout)
        writer.writerow(flat)
        writer.writerow(["" if v is None else v for v in flat.values()])
        return
    table = Table(
        title=f"{data['gpu']} {data['pricing']}: rent now or wait? "
        f"({data['history_days']} of {data['days']} days of history)"
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in flat.items():
        if name not in ("methodology", "gpu", "pricing", "days", "history_days"):
            shown = f"{value:.4f}" if isinstance(value, float) else str(value)
            table.add_row(name, "-" if value is None else shown)
    Console().print(table)


@user_errors
@scope_options(MARKET_SCOPE)
def market_command(
    scope: OfferScope,
    days: Annotated[int, typer.Option(help="Days of history to weigh now against")] = 30,
    below: Annotated[str | None, typer.Option(help="Prices, e.g. 1.5,2 (USD per GPU-hour)")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Rent now or wait: where the latest hourly index sits against the last days."""
    values: dict[str, Any] = {"days": days}
    if below is not None:
        values["below"] = below
    try:
        query = MarketQuery(
            **scope.model_dump(exclude={"gpu"}), gpu=_need_gpu(scope, "market"), **values
        )
    except ValidationError as exc:
        raise typer.BadParameter(validation_line(exc)) from None
    found = answered(
        load_settings(db, config),
        api,
        lambda remote: remote.get("/market", query_params(query)),
        lambda warehouse: market_outlook(warehouse, query, datetime.now(UTC)),
    )
    body = MarketOut.model_validate(found)
    print_market(body.model_dump(mode="json"), fmt)
