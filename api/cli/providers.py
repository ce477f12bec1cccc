"""`gpuprices providers`: what each registered provider module declares, as a table, JSON or the
markdown table the README carries (a test fails when the README's copy is stale)."""

from __future__ import annotations

from dataclasses import asdict
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from api.cli.common import ConfigOption, load_settings, out, user_errors
from api.cli.offers import print_json
from pipeline.base import ProviderFacts, provider_facts
from pipeline.timeparse import format_duration

__all__ = ["ProvidersFormat", "providers", "providers_markdown"]


class ProvidersFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


_COLUMNS = (
    "provider",
    "endpoint",
    "key",
    "interval",
    "currency",
    "regions placed",
    "listed only",
    "price index",
)

_SHORT_HEADERS = ("provider", "endpoint", "key", "every", "cur", "places", "listed", "index")
"""The terminal table's headers: the same columns, narrow enough for 80 columns."""


@user_errors
def providers(
    fmt: Annotated[
        ProvidersFormat,
        typer.Option("--format", help="table, json, or markdown (the README's provider table)"),
    ] = ProvidersFormat.TABLE,
    config: ConfigOption = None,
) -> None:
    """Every registered provider: endpoint, key variable (and "not configured" when a required
    one is set neither in the environment nor in the settings file), default interval, currency,
    regions placed, listed only; from the provider modules themselves."""
    facts = provider_facts(load_settings(None, config).provider_env())
    if fmt is ProvidersFormat.JSON:
        print_json({"providers": [_as_json(f) for f in facts], "count": len(facts)})
    elif fmt is ProvidersFormat.MARKDOWN:
        typer.echo(providers_markdown(facts), nl=False)
    else:
        table = Table(
            title=f"{len(facts)} providers", box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), expand=True
        )
        for column, header in zip(_COLUMNS, _SHORT_HEADERS, strict=True):
            wide = column == "endpoint"  # takes the room the others leave
            table.add_column(header, overflow="fold", no_wrap=not wide, ratio=1 if wide else None)
        for row in facts:
            table.add_row(*_cells(row, code="", key_sep="\n", configured=row.configured))
        out.print(table)


def providers_markdown(facts: list[ProviderFacts]) -> str:
    """The markdown table of `facts`, one row per provider, ending with a newline."""
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_cells(row, code="`")) + " |" for row in facts]
    return "\n".join(lines) + "\n"


def _cells(
    row: ProviderFacts, *, code: str, key_sep: str = " ", configured: bool = True
) -> list[str]:
    """A row's cells; `configured` false (the terminal table, a required key not set) says so
    in place of "required"."""
    if row.key_variable is None:
        key = "none"
    else:
        need = (
            "not configured" if not configured else "required" if row.key_required else "optional"
        )
        key = f"{code}{row.key_variable}{code}{key_sep}({need})"
    return [
        row.name if row.kind == "offers" else f"{row.name}{key_sep}(rates)",
        f"{code}{row.endpoint}{code}",
        key,
        format_duration(row.interval),
        row.currency,
        str(row.regions_placed),
        "yes" if row.listed_only else "no",
        "yes" if row.in_price_index else "no",
    ]


def _as_json(row: ProviderFacts) -> dict[str, Any]:
    data = asdict(row)
    data["interval_s"] = int(data.pop("interval").total_seconds())
    return data
