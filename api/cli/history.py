"""`gpuprices history`, `gpuprices export` and `gpuprices prune`."""

from __future__ import annotations

import csv
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from api.rest.schemas import HistoryOut
from pipeline.market.history import HistoryQuery, export_partitioned, price_history, prune
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["export", "history", "prune_command", "sparkline"]

SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """One character per value, scaled between the series' own min and max."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(
        SPARKS[0 if span == 0 else round((v - low) / span * (len(SPARKS) - 1))] for v in values
    )


def parse_time(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"'{value}' is not ISO 8601", param_hint=option) from None
    if parsed.tzinfo is None:
        raise typer.BadParameter(f"'{value}' has no timezone; add Z", param_hint=option)
    return parsed


def history(settings: Settings, query: HistoryQuery, fmt: str) -> None:
    with Warehouse.open(settings.warehouse_target) as warehouse:
        body = HistoryOut.model_validate(price_history(warehouse, query, datetime.now(UTC)))
    data = body.model_dump(mode="json")
    if fmt == "json":
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(
            [
                "gpu",
                "form_factor",
                "provider",
                "pricing",
                "t",
                "min",
                "min_available",
                "p25",
                "median",
                "max",
                "offers",
                "available",
                "snapshots",
            ]
        )
        for series in data["series"]:
            for pt in series["points"]:
                writer.writerow(
                    [
                        series["gpu"],
                        series["form_factor"] or "",
                        series["provider"],
                        series["pricing"],
                        *pt.values(),
                    ]
                )
        return
    table = Table(
        title=f"{query.gpu} per GPU-hour, {query.interval} buckets, "
        f"{data['since']} .. {data['until']}"
    )
    for column in (
        "gpu",
        "provider",
        "pricing",
        "points",
        "min",
        "median",
        "max",
        "trend (median)",
    ):
        table.add_column(column, no_wrap=column != "trend (median)")
    for series in data["series"]:
        points: list[dict[str, Any]] = series["points"]
        table.add_row(
            series["gpu"],
            series["provider"],
            series["pricing"],
            str(len(points)),
            f"{min(p['min'] for p in points):.4f}",
            f"{points[-1]['median']:.4f}",
            f"{max(p['max'] for p in points):.4f}",
            sparkline([p["median"] for p in points]),
        )
    Console().print(table)


def export(settings: Settings, since: str, until: str | None, out: Path) -> int:
    start = parse_time(since, "--since")
    end = parse_time(until, "--until") or datetime.now(UTC)
    assert start is not None
    with Warehouse.open(settings.warehouse_target) as warehouse:
        return export_partitioned(warehouse, start, end, out)


def prune_command(settings: Settings) -> dict[str, int]:
    with Warehouse.open(settings.warehouse_target) as warehouse:
        return prune(warehouse, datetime.now(UTC), settings.retention)


HistoryFormat = Annotated[str, typer.Option("--format", help="table, json or csv")]
