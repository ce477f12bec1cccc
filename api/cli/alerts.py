"""`gpuprices alerts add|list|rm|test|deliveries`.

A typer sub-app registered by `api/cli/commands.py` (`app.add_typer(alerts_app, name="alerts")`);
the error edge and settings options come from `api.cli.common`, like every other command's.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import orjson
import typer
from pydantic import BaseModel, ValidationError
from rich.markup import escape

from api.cli.common import (
    ConfigOption,
    DbOption,
    err,
    load_settings,
    option_duration,
    out,
    user_errors,
)
from api.cli.remote import ApiOption, answered, remote_for
from api.cli.scope import scope_options
from api.cli.webhooks import print_delivery
from api.rest.schemas_alerts import (
    AlertCreatedOut,
    AlertIn,
    AlertOut,
    AlertsPage,
    DeliveriesPage,
    DeliveryOut,
    alert_out,
    created_out,
    delivery_out,
)
from pipeline.alerts import (
    ALERT_SCOPE,
    DEFAULT_BAND,
    AlertKind,
    AlertSpec,
    Condition,
    alert_deliveries,
    create_alert,
    delete_alert,
    list_alerts,
    send_test,
)
from pipeline.market.scope import OfferScope
from warehouse import Warehouse

__all__ = ["alerts_app"]

alerts_app = typer.Typer(
    help="Price and availability alerts pushed as signed webhooks.", no_args_is_help=True
)


class AlertFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


FormatOption = Annotated[AlertFormat, typer.Option("--format")]


def _print_json(model: BaseModel) -> None:
    data = model.model_dump(mode="json")
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def _describe(alert: AlertOut) -> str:
    filters = [*alert.providers, *(p for p in (alert.pricing, alert.region) if p)]
    if alert.min_gpu_count:
        filters.append(f"≥{alert.min_gpu_count} GPUs")
    where = f" ({', '.join(filters)})" if filters else ""
    if alert.kind is AlertKind.PRICE:
        return f"{alert.gpu} at or below ${alert.below_price_per_gpu_hour:g}/GPU-h{where}"
    if alert.kind is AlertKind.AVAILABILITY:
        return f"{alert.gpu} available somewhere new{where}"
    if alert.kind is AlertKind.PROVIDER_HEALTH:
        return f"provider health: {', '.join(alert.providers) or 'every provider'}"
    if alert.kind is AlertKind.INDEX:
        hours = (alert.within_seconds or 0) / 3600
        return f"{alert.gpu} index moves {alert.index_change_percent:+g}% within {hours:g}h{where}"
    return f"workload at or below ${alert.below_cost_usd:g}{where}"


def _percent(value: str | None, option: str) -> float | None:
    """`-10%`, `+10%`, `-10` -> -10.0, +10.0, -10.0; a usage error otherwise."""
    if value is None:
        return None
    try:
        return float(value.strip().removesuffix("%"))
    except ValueError:
        raise typer.BadParameter(
            f"a percentage like -10% or +10%, got {value!r}", param_hint=option
        ) from None


def _condition(
    gpu: str | None,
    below: float | None,
    available: bool,
    workload: Path | None,
    below_cost: float | None,
    index_change: float | None = None,
    provider_health: bool = False,
) -> tuple[AlertKind, dict[str, Any] | None]:
    chosen = [
        kind
        for kind, given in (
            (AlertKind.PROVIDER_HEALTH, provider_health),
            (AlertKind.INDEX, index_change is not None),
            (AlertKind.PRICE, below is not None),
            (AlertKind.AVAILABILITY, available),
            (AlertKind.WORKLOAD, workload is not None or below_cost is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise typer.BadParameter(
            "give one of --below PRICE, --available, --index-change PERCENT, "
            "--provider-health, or --workload FILE --below-cost USD",
            param_hint="condition",
        )
    kind = chosen[0]
    if kind is AlertKind.WORKLOAD:
        if workload is None or below_cost is None:
            raise typer.BadParameter(
                "needs both --workload and --below-cost", param_hint="--workload"
            )
        try:
            saved = json.loads(workload.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(
                f"cannot read {workload}: {exc}", param_hint="--workload"
            ) from None
        try:  # checked as the quote it will run, as POST /alerts checks it
            AlertIn.model_validate({"url": "https://x", "kind": kind, "workload": saved})
        except ValidationError as exc:
            first = exc.errors()[0]
            reason = str(first["msg"]).removeprefix("Value error, ")
            raise typer.BadParameter(f"{workload}: {reason}", param_hint="--workload") from None
        return kind, saved
    if kind is AlertKind.PROVIDER_HEALTH:
        return kind, None
    if not gpu:
        raise typer.BadParameter(f"a {kind} alert needs --gpu", param_hint="--gpu")
    return kind, None


@alerts_app.command("add")
@user_errors
@scope_options(ALERT_SCOPE)
def add(
    scope: OfferScope,
    url: Annotated[
        str,
        typer.Option(
            help="Webhook target (https; http/private with GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true)"
        ),
    ],
    below: Annotated[
        float | None, typer.Option(min=0, help="Price alert: USD per GPU-hour, at most")
    ] = None,
    available: Annotated[
        bool, typer.Option("--available", help="Alert when the GPU is available somewhere new")
    ] = False,
    workload: Annotated[
        Path | None, typer.Option(help="Workload alert: the job as JSON (POST /quotes body)")
    ] = None,
    below_cost: Annotated[
        float | None, typer.Option(min=0, help="Workload alert: total USD, at most")
    ] = None,
    index_change: Annotated[
        str | None,
        typer.Option(help="Index alert: the hourly index moved this much, e.g. -10% or +10%"),
    ] = None,
    within: Annotated[str, typer.Option(help="Index alert: against its value this long before")] = (
        "24h"
    ),
    provider_health: Annotated[
        bool,
        typer.Option(
            "--provider-health",
            help="Alert when a provider (all, or those of --provider) is degraded, and again "
            "when it recovers",
        ),
    ] = False,
    band: Annotated[
        float, typer.Option(min=0, help="Re-arm above threshold + band (same unit)")
    ] = DEFAULT_BAND,
    cooldown: Annotated[str, typer.Option(help="No second event within: 90s, 30m, 1h")] = "0s",
    fmt: FormatOption = AlertFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Create an alert; prints it with its id and, this once, its signing secret.

    A price alert watches on-demand offers unless --pricing spot is given."""
    change = _percent(index_change, "--index-change")
    kind, saved = _condition(
        scope.gpu, below, available, workload, below_cost, change, provider_health
    )
    wait = option_duration(cooldown, "--cooldown")
    condition = Condition(
        kind=kind,
        scope=scope,
        below_price_per_gpu_hour=below if kind is AlertKind.PRICE else None,
        below_cost_usd=below_cost if kind is AlertKind.WORKLOAD else None,
        workload=saved,
        index_change_percent=change,
        within=option_duration(within, "--within") if kind is AlertKind.INDEX else None,
    )
    spec = AlertSpec(url=url, condition=condition, band=band, cooldown=wait)
    settings = load_settings(db, config)
    remote = remote_for(settings, api)
    if remote is not None:
        body = {
            **scope.model_dump(mode="json", by_alias=True, exclude_defaults=True),
            "url": url,
            "kind": str(kind),
            "below_price_per_gpu_hour": condition.below_price_per_gpu_hour,
            "below_cost_usd": condition.below_cost_usd,
            "workload": saved,
            "band": band,
            "cooldown": wait.total_seconds(),
        }
        answer = remote.request("POST", "/alerts", json_body=body)
        created = AlertCreatedOut.model_validate(answer)
    else:
        with Warehouse.open(settings.warehouse_target) as warehouse:
            created = created_out(create_alert(warehouse, spec, settings, datetime.now(UTC)))
    if fmt is AlertFormat.JSON:
        _print_json(created)
        return
    out.print(
        f"alert [bold]{created.id}[/bold]: {_describe(created)} → {created.url}",
        highlight=False,
        soft_wrap=True,
    )
    out.print(f"secret: {created.secret}", highlight=False, soft_wrap=True)
    err.print("[yellow]The secret is shown only now: keep it to verify webhook-signature.[/yellow]")


@alerts_app.command("list")
@user_errors
def list_command(
    fmt: FormatOption = AlertFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Every alert with its state (armed, last value, last fired)."""
    alerts = answered(
        load_settings(db, config),
        api,
        lambda remote: [AlertOut.model_validate(a) for a in remote.every("/alerts", "alerts")],
        lambda warehouse: [alert_out(status) for status in list_alerts(warehouse)],
    )
    if fmt is AlertFormat.JSON:
        _print_json(AlertsPage(alerts=alerts, count=len(alerts), total=len(alerts)))
        return
    if not alerts:
        err.print("no alerts yet: add one with `gpuprices alerts add`")
    for a in alerts:
        out.print(f"[bold]{a.id}[/bold] {_describe(a)} → {a.url}", highlight=False, soft_wrap=True)
        state = a.state
        if a.disabled_reason:
            line = f"[red]disabled[/red]: {a.disabled_reason}"
        elif state is None:
            line = "not evaluated yet (after the next collection)"
        else:
            fired = f"{state.last_fired_at:%Y-%m-%d %H:%M}" if state.last_fired_at else "never"
            value = "-" if state.last_value is None else f"{state.last_value:g}"
            line = f"armed: {'yes' if state.armed else 'no'} · last value {value} · fired {fired}"
        out.print(f"  {line}", highlight=False, soft_wrap=True)
        if a.evaluation_error:
            out.print(
                f"  [red]last evaluation failed[/red]: {escape(a.evaluation_error)}",
                highlight=False,
                soft_wrap=True,
            )


@alerts_app.command("rm")
@user_errors
def rm(
    alert_id: Annotated[str, typer.Argument(metavar="ID")],
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Delete an alert; its pending deliveries are cancelled."""
    answered(
        load_settings(db, config),
        api,
        lambda remote: remote.request("DELETE", f"/alerts/{quote(alert_id, safe='')}"),
        lambda warehouse: delete_alert(warehouse, alert_id, datetime.now(UTC)),
    )
    err.print(f"deleted {alert_id}")


@alerts_app.command("test")
@user_errors
def test(
    alert_id: Annotated[str, typer.Argument(metavar="ID")],
    fmt: FormatOption = AlertFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Send an `alert.test` event now (later retries, if any, belong to `serve`)."""
    settings = load_settings(db, config)
    delivery = answered(
        settings,
        api,
        lambda remote: DeliveryOut.model_validate(
            remote.request("POST", f"/alerts/{quote(alert_id, safe='')}/test")
        ),
        lambda warehouse: delivery_out(send_test(warehouse, settings, alert_id)),
    )
    if fmt is AlertFormat.JSON:
        _print_json(delivery)
    else:
        print_delivery(delivery)
    if delivery.status != "delivered":
        raise typer.Exit(1)


@alerts_app.command("deliveries")
@user_errors
def deliveries(
    alert_id: Annotated[str, typer.Argument(metavar="ID")],
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Most deliveries, newest first")] = 20,
    fmt: FormatOption = AlertFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Every delivery of an alert with each attempt: time, status code, latency, error."""
    path = f"/alerts/{quote(alert_id, safe='')}/deliveries"
    logs = answered(
        load_settings(db, config),
        api,
        lambda remote: DeliveriesPage.model_validate(remote.get(path, {"limit": limit})).deliveries,
        lambda warehouse: [delivery_out(d) for d in alert_deliveries(warehouse, alert_id, limit)],
    )
    if fmt is AlertFormat.JSON:
        _print_json(DeliveriesPage(deliveries=logs, count=len(logs)))
        return
    if not logs:
        err.print(f"no deliveries for {alert_id} yet")
    for delivery in logs:
        print_delivery(delivery)
