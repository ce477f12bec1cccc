"""`gpuprices collect`: one collection here, or, beside a running `serve` (or with `--api`), by
that server (`POST /collections`, recorded answers uploaded as files)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from api.cli.common import ConfigOption, DbOption, err, load_settings, option_time, user_errors
from api.cli.remote import ApiOption, remote_for
from api.cli.replays import parse_replays
from api.cli.webhooks import print_webhook_results, send_fired
from api.rest.schemas_collections import CollectionOut, collection_out
from pipeline.collection.runs import collect as collect_and_alert
from pipeline.timeparse import TimeParseError, check_not_future
from scrapers import sources
from warehouse import Warehouse

__all__ = ["collect", "parse_replays"]


def _unknown(name: str, hint: str) -> typer.BadParameter:
    known = ", ".join(sorted(sources()))
    return typer.BadParameter(f"unknown provider '{name}' (known: {known})", param_hint=hint)


def _parse_at(value: str | None) -> datetime | None:
    """`--at`: an observation time, so never in the future (beyond a little clock skew)."""
    at = option_time(value, "--at")
    try:
        return check_not_future(at, datetime.now(UTC), "--at") if at else None
    except TimeParseError as exc:
        raise typer.BadParameter(str(exc), param_hint="--at") from None


def _report_table(result: CollectionOut, where: str) -> Table:
    table = Table(title=f"Collection{where}")
    for column in ("provider", "status", "offers", "rejected", "seconds", "error"):
        numeric = column in ("offers", "rejected", "seconds")
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for r in result.runs:
        table.add_row(
            r.provider,
            "[green]ok[/green]" if r.status == "ok" else "[red]failed[/red]",
            str(r.offer_count),
            str(r.reject_count),
            f"{r.seconds:.2f}",
            r.error or "",
        )
    return table


@user_errors
def collect(
    provider: Annotated[
        list[str] | None, typer.Option("--provider", "-p", help="Provider to collect (repeatable)")
    ] = None,
    replay: Annotated[
        list[str] | None,
        typer.Option(
            "--replay",
            help="NAME=FILE (NAME=DIR for scaleway), or a folder of <provider>.<ext> files: "
            "recorded answers instead of "
            "the network",
        ),
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="observed_at for this run: ISO 8601, or 2h (ago)")
    ] = None,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Collect offers once from each provider (or only the replayed ones) and store them.

    Beside a running `serve` (or with --api) the server collects, the recorded answers uploaded.
    """
    replays = parse_replays(replay or [])
    observed_at = _parse_at(at)
    for name in provider or []:
        if name not in sources():
            raise _unknown(name, "--provider")
    settings = load_settings(db, config)
    remote = remote_for(settings, api)
    if remote is not None:
        err.print(f"asking the server at {remote.url} to collect", highlight=False)
        form = {
            "provider": provider or [],
            "at": observed_at.isoformat() if observed_at else None,
            # fetched over the network: every provider without replays, else those named
            "live": "true" if not replays or set(provider or []) - set(replays) else None,
        }
        files = [  # a directory of answers goes as <provider>/<file>, each file on its own
            ("replay", (f"{name}/{f.name}" if path.is_dir() else f"{name}{path.suffix}",
                        f.read_bytes()))
            for name, path in replays.items()
            for f in (sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path])
        ]  # fmt: skip
        body = remote.request(
            "POST", "/collections", data={k: v for k, v in form.items() if v}, files=files
        )
        result = CollectionOut.model_validate(body)
        _print_result(result, f" by {remote.url}")
        return
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
    print_webhook_results(webhooks)
    _print_result(collection_out(collected), "")


def _print_result(result: CollectionOut, where: str) -> None:
    err.print(_report_table(result, where))
    for run in result.runs:
        for reject in run.rejects:
            err.print(
                f"[yellow]rejected[/yellow] {run.provider} record {reject.record_id}: "
                f"{reject.reason}",
                highlight=False,
                soft_wrap=True,
            )
    if any(r.status == "failed" for r in result.runs):
        raise typer.Exit(1)
