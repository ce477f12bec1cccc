"""`gpuprices history`, `gpuprices export` and `gpuprices prune`."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from api.cli.common import SafeCsvWriter, open_existing, option_time
from api.cli.remote import Remote, query_params
from api.rest.observations import unpack_observations
from api.rest.schemas import HistoryOut
from pipeline.market.history import HistoryQuery, export_partitioned, price_history, prune
from pipeline.settings import Settings

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


def history(settings: Settings, query: HistoryQuery, fmt: str, remote: Remote | None) -> None:
    if remote is not None:
        body = HistoryOut.model_validate(remote.get("/prices/history", query_params(query)))
    else:
        with open_existing(settings) as warehouse:
            found = price_history(warehouse, query, datetime.now(UTC))
        body = HistoryOut.model_validate(found)
    data = body.model_dump(mode="json")
    if fmt == "json":
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    if fmt == "csv":
        writer = SafeCsvWriter(sys.stdout)
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
            " ".join(filter(None, (series["gpu"], series["form_factor"]))),
            series["provider"],
            series["pricing"],
            str(len(points)),
            f"{min(p['min'] for p in points):.4f}",
            f"{points[-1]['median']:.4f}",
            f"{max(p['max'] for p in points):.4f}",
            sparkline([p["median"] for p in points]),
        )
    Console().print(table)


def export(
    settings: Settings, since: str, until: str | None, out: Path, remote: Remote | None
) -> int:
    start = option_time(since, "--since")
    end = option_time(until, "--until") or datetime.now(UTC)
    assert start is not None
    try:
        if remote is not None:
            params = {"since": start.isoformat(), "until": end.isoformat()}
            archive = remote.get("/export/observations.tar", params)
            return unpack_observations(archive, out)
        with open_existing(settings) as warehouse:
            return export_partitioned(warehouse, start, end, out)
    except OSError as exc:  # a folder that cannot be made or written
        reason = exc.strerror or str(exc)
        raise typer.BadParameter(f"cannot write to {out}: {reason}", param_hint="--out") from None


def prune_command(settings: Settings) -> dict[str, int]:
    with open_existing(settings) as warehouse:
        return prune(warehouse, datetime.now(UTC), settings.retention)


HistoryFormat = Annotated[str, typer.Option("--format", help="table, json or csv")]
