"""The `gpuprices` command line: thin commands over the same functions the API calls."""

from __future__ import annotations

import csv
import io
import logging
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import api.cli.history as cli_history
from api.cli.alerts import alerts_app, print_webhook_results, send_fired
from api.cli.common import (
    ConfigOption,
    DbOption,
    err,
    load_settings,
    open_existing,
    option_time,
    out,
    user_errors,
)
from api.cli.index import index_command, market_command
from api.cli.quote import quote
from api.cli.scope import scope_options
from api.cli.warehouse import warehouse_app
from api.rest.schemas import OfferOut
from pipeline.collection.collect import RunReport
from pipeline.collection.runs import collect as collect_and_alert
from pipeline.errors import PipelineError
from pipeline.market.freshness import provider_freshness
from pipeline.market.history import HISTORY_SCOPE, HistoryQuery
from pipeline.market.offers import OfferQuery, gpu_specs
from pipeline.market.scope import ALL_SCOPE, OfferScope
from pipeline.market.serving import answer_offers
from pipeline.timeparse import TimeParseError, check_not_future
from scrapers import PROVIDERS
from warehouse import Warehouse

__all__ = ["app", "main"]

app = typer.Typer(
    help="Track GPU offers and prices across Vast.ai, RunPod, Lambda and CoreWeave.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


class Role(StrEnum):
    ALL = "all"
    API = "api"
    COLLECTOR = "collector"


class SortKey(StrEnum):
    PRICE_PER_GPU_HOUR = "price_per_gpu_hour"
    PRICE_PER_HOUR = "price_per_hour"


def _parse_replays(values: list[str]) -> dict[str, Path]:
    replays: dict[str, Path] = {}
    for value in values:
        name, sep, file = value.partition("=")
        if not sep or not name or not file:
            raise typer.BadParameter(f"'{value}' is not NAME=FILE", param_hint="--replay")
        path = Path(file)
        if not path.is_file():
            raise typer.BadParameter(f"no such file: {file}", param_hint="--replay")
        if name not in PROVIDERS:
            known = ", ".join(sorted(PROVIDERS))
            raise typer.BadParameter(
                f"unknown provider '{name}' (known: {known})", param_hint="--replay"
            )
        replays[name] = path
    return replays


def _parse_at(value: str | None) -> datetime | None:
    """`--at`: an observation time, so never in the future (beyond a little clock skew)."""
    at = option_time(value, "--at")
    try:
        return check_not_future(at, datetime.now(UTC), "--at") if at else None
    except TimeParseError as exc:
        raise typer.BadParameter(str(exc), param_hint="--at") from None


def _report_table(reports: list[RunReport]) -> Table:
    table = Table(title="Collection")
    for column in ("provider", "status", "offers", "rejected", "seconds", "error"):
        table.add_column(
            column, justify="right" if column in ("offers", "rejected", "seconds") else "left"
        )
    for r in reports:
        status = "[green]ok[/green]" if r.status == "ok" else "[red]failed[/red]"
        table.add_row(
            r.provider,
            status,
            str(r.offer_count),
            str(r.reject_count),
            f"{r.seconds:.2f}",
            r.error or "",
        )
    return table


@app.command()
@user_errors
def collect(
    provider: Annotated[
        list[str] | None, typer.Option("--provider", "-p", help="Provider to collect (repeatable)")
    ] = None,
    replay: Annotated[
        list[str] | None,
        typer.Option(
            "--replay", help="NAME=FILE: feed a saved response body instead of the network"
        ),
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="observed_at for this run, ISO 8601 with timezone")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Collect offers once from each provider (or only the replayed ones) and store them."""
    replays = _parse_replays(replay or [])
    observed_at = _parse_at(at)
    for name in provider or []:
        if name not in PROVIDERS:
            known = ", ".join(sorted(PROVIDERS))
            raise typer.BadParameter(
                f"unknown provider '{name}' (known: {known})", param_hint="--provider"
            )
    settings = load_settings(db, config)
    if replays:
        names = list(dict.fromkeys([*replays, *(provider or [])]))
    else:
        names = list(provider or settings.providers)
    with (
        Warehouse.open(settings.warehouse_target) as warehouse,
        Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err
        ) as progress,
    ):
        tasks = {name: progress.add_task(f"{name}: waiting", total=None) for name in names}

        def on_stage(name: str, stage: str) -> None:
            progress.update(tasks[name], description=f"{name}: {stage}")

        collected = collect_and_alert(
            names, warehouse, settings, observed_at=observed_at, replays=replays, progress=on_stage
        )
        progress.stop()
        webhooks = send_fired(warehouse, settings, collected.fired)
    reports = collected.reports
    err.print(_report_table(reports))
    print_webhook_results(webhooks)
    for report in reports:
        for reject in report.rejects:
            err.print(
                f"[yellow]rejected[/yellow] {report.provider} record {reject.record_id}: "
                f"{reject.reason}",
                highlight=False,
                soft_wrap=True,
            )
    if any(r.status == "failed" for r in reports):
        raise typer.Exit(1)


def _offer_dicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [OfferOut.model_validate(row).model_dump(mode="json") for row in rows]


@app.command()
@user_errors
@scope_options(ALL_SCOPE)
def offers(
    scope: OfferScope,
    sort: Annotated[SortKey, typer.Option(help="Cheapest first by")] = SortKey.PRICE_PER_GPU_HOUR,
    limit: Annotated[int | None, typer.Option(min=1, max=10**9, help="Most offers")] = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="ISO 8601: the offers as they stood then")
    ] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """List what is on offer now (or as of a time), cheapest per GPU-hour first."""
    query = OfferQuery(
        **scope.model_dump(),
        sort=sort.value,
        limit=limit,
        as_of=option_time(as_of, "--as-of"),
    )
    settings = load_settings(db, config)
    with open_existing(settings) as warehouse:
        now = datetime.now(UTC)
        freshness = provider_freshness(warehouse, settings, now)
        answer = answer_offers(warehouse, settings, query, now, freshness)
        rows = _offer_dicts(answer.offers)
    if fmt is OutputFormat.JSON:
        sys.stdout.write(orjson.dumps({"offers": rows}, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif fmt is OutputFormat.CSV:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(OfferOut.model_fields), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    else:
        out.print(_offers_table(rows))


_OFFER_COLUMNS = (
    ("GPU", "gpu"),
    ("provider", "provider"),
    ("pricing", "pricing"),
    ("$/GPU-h", "price_per_gpu_hour"),
    ("$/h", "price_per_hour"),
    ("GPUs", "gpu_count"),
    ("GB", "vram_gb"),
    ("region", "region"),
)


_NUMERIC = frozenset({"price_per_gpu_hour", "price_per_hour", "gpu_count", "vram_gb"})


def _offers_table(rows: list[dict[str, Any]]) -> Table:
    observed = sorted({row["observed_at"] for row in rows})
    caption = f"observed {observed[0]} .. {observed[-1]}" if observed else None
    table = Table(title=f"{len(rows)} offers", caption=caption)
    for header, key in _OFFER_COLUMNS:
        if key == "region":
            table.add_column(header, overflow="fold", min_width=10)
        else:
            table.add_column(header, no_wrap=True, justify="right" if key in _NUMERIC else "left")
    for row in rows:
        gpu = row["gpu"] or f"{row['gpu_raw']} (?)"
        if row["form_factor"]:
            gpu += f" {row['form_factor']}"
        table.add_row(
            gpu,
            row["provider"],
            row["pricing"],
            f"{row['price_per_gpu_hour']:.4f}",
            f"{row['price_per_hour']:.2f}",
            str(row["gpu_count"]),
            _cell(round(row["vram_gb"]) if row["vram_gb"] else None),
            (row["region"] or "-") + ("" if row["available"] else " (sold out)"),
        )
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if value < 1000 else f"{value:.0f}"
    return str(value)


@app.command()
@user_errors
def gpus(
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.TABLE,
) -> None:
    """The GPU catalog: canonical ids, VRAM, form factors, TFLOPs and aliases."""
    specs = [asdict(spec) for spec in gpu_specs()]
    if fmt is OutputFormat.JSON:
        sys.stdout.write(orjson.dumps({"gpus": specs}, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    if fmt is OutputFormat.CSV:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(list(specs[0]))
        writer.writerows(
            ["|".join(v) if isinstance(v, tuple) else v for v in spec.values()] for spec in specs
        )
        return
    table = Table(title=f"{len(specs)} GPUs")
    columns = ("id", "family", "vram GB", "form factors", "bf16", "bf16 TFLOPs", "fp16 TFLOPs")
    for column in (*columns, "mem BW GB/s"):
        table.add_column(column)
    for spec in specs:
        table.add_row(
            spec["id"],
            spec["family"],
            _cell(spec["vram_gb"]),
            ", ".join(spec["form_factors"]) or "-",
            "yes" if spec["bf16"] else "no (fp16)",
            _cell(spec["bf16_tflops_dense"]),
            _cell(spec["fp16_tflops_dense"]),
            _cell(spec["mem_bw_gbps"]),
        )
    out.print(table)


@app.command()
@user_errors
def serve(
    host: Annotated[
        str | None, typer.Option(help="[env: GPUPRICES_HOST; default 127.0.0.1]")
    ] = None,
    port: Annotated[int | None, typer.Option(help="[env: GPUPRICES_PORT; default 8000]")] = None,
    no_scheduler: Annotated[
        bool, typer.Option("--no-scheduler", help="Serve only; do not collect on schedule")
    ] = False,
    role: Annotated[
        Role | None,
        typer.Option(
            help="all: API and collection; api: read-only replica; collector [env: GPUPRICES_ROLE]"
        ),
    ] = None,
    providers: Annotated[
        str | None,
        typer.Option(help="Providers to collect, e.g. vastai,runpod [env: GPUPRICES_PROVIDERS]"),
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Serve the REST API and collect on schedule (OpenAPI at /docs)."""
    import uvicorn

    from api.app import create_app
    from api.rest.edge import tune_for_serving

    settings = load_settings(
        db,
        config,
        host=host,
        port=port,
        role=role.value if role is not None else None,
        providers=providers,
    )
    if no_scheduler:
        settings = settings.model_copy(update={"scheduler": False})
    # fail here, with one line, if the file is held
    warehouse = Warehouse.open(settings.warehouse_target)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # our own run lines say enough
    tune_for_serving()  # the event loop's wait for the GIL; garbage collection pauses
    try:
        uvicorn.run(
            create_app(settings, warehouse),
            host=settings.host,
            port=settings.port,
            log_level="info",
            timeout_graceful_shutdown=30,
        )
    finally:
        warehouse.close()


class Interval(StrEnum):
    H1 = "1h"
    H6 = "6h"
    D1 = "1d"
    W1 = "1w"


@app.command("history")
@user_errors
@scope_options(HISTORY_SCOPE)
def history_command(
    scope: OfferScope,
    interval: Annotated[Interval, typer.Option(help="Bucket size")] = Interval.H1,
    since: Annotated[str | None, typer.Option(help="ISO 8601 start")] = None,
    until: Annotated[str | None, typer.Option(help="ISO 8601 end (default now)")] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
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
    cli_history.history(load_settings(db, config), query, fmt.value)


@app.command("export")
@user_errors
def export_command(
    out: Annotated[Path, typer.Option("--out", help="Directory for date=/provider= Parquet")],
    since: Annotated[str, typer.Option(help="ISO 8601 start (inclusive)")],
    until: Annotated[str | None, typer.Option(help="ISO 8601 end (exclusive, default now)")] = None,
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Raw observations in a range as Hive-partitioned Parquet (date=YYYY-MM-DD/provider=...)."""
    rows = cli_history.export(load_settings(db, config), since, until, out)
    err.print(f"exported {rows} observations to {out}")


@app.command("prune")
@user_errors
def prune_cmd(db: DbOption = None, config: ConfigOption = None) -> None:
    """Delete raw observations older than the retention window (summaries are kept)."""
    deleted = cli_history.prune_command(load_settings(db, config))
    err.print(", ".join(f"{table}: {n} deleted" for table, n in deleted.items()))


app.command("quote")(quote)
app.command("index")(index_command)
app.command("market")(market_command)
app.add_typer(alerts_app, name="alerts")
app.add_typer(warehouse_app, name="warehouse")


def main() -> None:
    app()
