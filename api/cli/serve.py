"""`gpuprices serve` and `gpuprices demo`: the API, the page and the schedule in one process.

`serve` leaves its address beside the database file (`<db>.serve.json`), so that the other
commands ask it instead of opening the file it holds; a clean stop removes it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from api.cli.common import (
    ConfigOption,
    DbOption,
    err,
    load_settings,
    option_duration,
    user_errors,
)
from api.cli.remote import remote_for, remove_address, write_address
from pipeline.collection.demo import DEMO_DB, DEMO_HISTORY, demo_settings, fill_demo
from pipeline.errors import PipelineError
from pipeline.settings import Settings
from warehouse import Warehouse

__all__ = ["demo", "serve"]


class Role(StrEnum):
    ALL = "all"
    API = "api"
    COLLECTOR = "collector"


HostOption = Annotated[str | None, typer.Option(help="[env: GPUPRICES_HOST; default 127.0.0.1]")]
PortOption = Annotated[int | None, typer.Option(help="[env: GPUPRICES_PORT; default 8000]")]


def _run(settings: Settings) -> None:
    import uvicorn

    from api.app import create_app
    from api.rest.connections import uvicorn_limits
    from api.rest.middleware import tune_for_serving

    # fail here, with one line, if the file is held
    warehouse = Warehouse.open(settings.warehouse_target)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # our own run lines say enough
    tune_for_serving()  # the event loop's wait for the GIL; garbage collection pauses
    target = settings.warehouse_target
    db = target if isinstance(target, Path) else None
    if db is not None:
        write_address(db, settings.host, settings.port)
    try:
        uvicorn.run(
            create_app(settings, warehouse, on_shutdown=lambda: remove_address(db) if db else None),
            host=settings.host,
            port=settings.port,
            log_level="info",
            **uvicorn_limits(settings),
        )
    finally:
        if db is not None:
            remove_address(db)
        warehouse.close()


@user_errors
def serve(
    host: HostOption = None,
    port: PortOption = None,
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
    _run(settings)


@user_errors
def demo(
    host: HostOption = None,
    port: PortOption = None,
    db: Annotated[
        Path, typer.Option("--db", help="The demo's own database, rebuilt each time")
    ] = DEMO_DB,
    config: ConfigOption = None,
    build_only: Annotated[
        bool, typer.Option("--build-only", help="Fill the demo database, do not serve it")
    ] = False,
    history: Annotated[
        str | None,
        typer.Option(help="How far back the hourly history goes (12h, 2d) [default: 2d]"),
    ] = None,
) -> None:
    """The whole product on recorded data, no network needed: a demo database of its own
    (two days of hourly history ending now), served and labelled as demo data."""
    if db.exists() and not db.name.endswith("demo.duckdb"):
        raise PipelineError(
            f"{db} exists and is not a demo database: give --db a new file (or *demo.duckdb, "
            "which the demo rebuilds)"
        )
    settings = demo_settings(load_settings(db, config, host=host, port=port))
    running = remote_for(settings, None)
    if running is not None:
        raise PipelineError(f"the demo is already being served at {running.url}")
    db.unlink(missing_ok=True)
    db.with_name(db.name + ".wal").unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    span = option_duration(history, "--history") if history is not None else DEMO_HISTORY
    hours = int(span.total_seconds() // 3600)
    err.print(f"filling {db} with {hours} h of recorded offers, one replay an hour…")
    with Warehouse.open(db) as warehouse:
        reports = fill_demo(warehouse, settings, now=lambda: datetime.now(UTC), history=span)
    failed = sorted({r.provider for r in reports if r.status == "failed"})
    if failed:
        raise PipelineError(f"the demo data of {', '.join(failed)} did not parse")
    err.print(
        f"demo ready: {len(reports)} runs. Open http://{settings.host}:{settings.port}/ "
        f'(the API says "demo": true); other commands take --db {db}',
        highlight=False,
    )
    if not build_only:
        _run(settings)
