"""The `gpuprices` command line: thin commands over the same functions the API calls.

Each command lives in its own module, imported only when that command runs (`api.cli.lazy`):
`gpuprices --help` lists them without loading the pipeline, the warehouse or the web app.
"""

from __future__ import annotations

import typer

from api.cli.lazy import LazyCommand, LazyGroup

__all__ = ["COMMANDS", "app", "main"]

COMMANDS = (
    LazyCommand(
        "collect",
        "api.cli.collect:collect",
        "Collect offers once from each provider and store them.",
    ),
    LazyCommand(
        "offers", "api.cli.offers:offers", "List what is on offer now, cheapest per GPU-hour first."
    ),
    LazyCommand("gpus", "api.cli.offers:gpus", "The GPU catalog: ids, VRAM, form factors, TFLOPs."),
    LazyCommand(
        "providers", "api.cli.providers:providers", "Every registered provider and its settings."
    ),
    LazyCommand(
        "serve",
        "api.cli.serve:serve",
        "Serve the REST API and collect on schedule (OpenAPI at /docs).",
    ),
    LazyCommand(
        "demo", "api.cli.serve:demo", "The whole product on recorded data, no network needed."
    ),
    LazyCommand("mcp", "api.cli.mcp:mcp", "Serve the answers as MCP tools on stdin/stdout."),
    LazyCommand(
        "quality", "api.cli.quality:quality", "Provider quality: health, resolved share, rejects."
    ),
    LazyCommand("models", "api.cli.models:models", "The models a quote knows by name."),
    LazyCommand(
        "history",
        "api.cli.observations:history_command",
        "How prices moved: min/median/max per GPU-hour per bucket.",
    ),
    LazyCommand(
        "export",
        "api.cli.observations:export_command",
        "Raw observations in a range as Hive-partitioned Parquet.",
    ),
    LazyCommand(
        "prune",
        "api.cli.observations:prune_cmd",
        "Delete raw observations older than the retention window.",
    ),
    LazyCommand(
        "quote", "api.cli.quote:quote", "What a fine-tuning job needs, and where it is cheapest."
    ),
    LazyCommand("index", "api.cli.index:index_command", "The GPU price index (methodology v1)."),
    LazyCommand(
        "market",
        "api.cli.index:market_command",
        "Rent now or wait: the latest index against the last days.",
    ),
    LazyCommand(
        "alerts",
        "api.cli.alerts:alerts_app",
        "Price and availability alerts pushed as signed webhooks.",
    ),
    LazyCommand(
        "warehouse", "api.cli.warehouse:warehouse_app", "Copy a warehouse between backends."
    ),
)
"""Every command, in the order `--help` lists them; `target` is `module:function` (or a Typer)."""


class GpupricesGroup(LazyGroup):
    lazy = {command.name: command for command in COMMANDS}


app = typer.Typer(
    cls=GpupricesGroup,
    help="Track GPU offers and prices across GPU clouds (`gpuprices providers` lists them).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain click help: reads at 80 columns, no <bool> metavars
)


@app.callback()
def _root() -> None:
    """Every command is a subcommand (typer builds a group only for a callback or commands)."""


def main() -> None:
    app()
