"""`gpuprices warehouse copy`: move an install between an embedded file and a DuckLake.

Imports nothing from `api.cli.commands` (which imports this), so it prints our errors as one line
itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pipeline.errors import PipelineError
from pipeline.settings import Settings
from warehouse import Warehouse, WarehouseError, parse_target
from warehouse.copy import copy_warehouse

__all__ = ["warehouse_app"]

warehouse_app = typer.Typer(help="Copy a warehouse between backends.", no_args_is_help=True)
err = Console(stderr=True)

DataPathOption = Annotated[
    str | None,
    typer.Option(help="Data path when that side is a lake [env: GPUPRICES_LAKE_DATA_PATH]"),
]


@warehouse_app.command("copy")
def copy_command(
    source: Annotated[
        str,
        typer.Option("--from", help="duckdb:///file.duckdb or ducklake:postgres:dbname=..."),
    ],
    target: Annotated[str, typer.Option("--to", help="The empty warehouse to copy into")],
    from_data_path: DataPathOption = None,
    to_data_path: DataPathOption = None,
) -> None:
    """Copy all history, runs, alerts and deliveries from one warehouse into an empty one."""
    try:
        default = Settings.load().lake_data_path
        origin = parse_target(source, from_data_path or default)
        if isinstance(origin, Path) and not origin.is_file():
            raise WarehouseError(f"No database file at {origin}: check --from")
        with (
            Warehouse.open(origin) as src,
            Warehouse.open(target, data_path=to_data_path or default) as dst,
        ):
            copied = copy_warehouse(src, dst)
    except (PipelineError, WarehouseError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    table = Table(title=f"copied into {target}")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, rows in copied.items():
        table.add_row(name, str(rows))
    err.print(table)
