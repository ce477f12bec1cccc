"""`gpuprices quality`: each provider's health over its last runs, as `GET /quality` shows it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from api.cli.common import (
    ConfigOption,
    DbOption,
    SinceOption,
    load_settings,
    option_time,
    out,
    user_errors,
)
from api.cli.offers import FormatOption, OutputFormat, print_json
from api.cli.remote import ApiOption, remote_for
from api.rest.schemas_quality import ProviderQualityOut
from pipeline.market.quality import quality_overview
from warehouse import Warehouse

__all__ = ["quality"]


@user_errors
def quality(
    provider: Annotated[str | None, typer.Option(help="Only this provider")] = None,
    since: SinceOption = None,
    fmt: FormatOption = OutputFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """Provider quality: health of the newest run (degraded and why), resolved share, rejects,
    unknown GPU spellings, answer drift and flagged price outliers."""
    start = option_time(since, "--since")
    settings = load_settings(db, config)
    remote = remote_for(settings, api)
    if remote is not None:
        params = {k: v for k, v in (("provider", provider), ("since", start)) if v is not None}
        found = remote.get(
            "/quality", {k: v if isinstance(v, str) else v.isoformat() for k, v in params.items()}
        )["providers"]
    else:
        with Warehouse.open(settings.warehouse_target) as warehouse:
            found = quality_overview(warehouse, provider, start)
    providers = [ProviderQualityOut.model_validate(p) for p in found]
    if fmt is not OutputFormat.TABLE:
        print_json({"providers": [p.model_dump(mode="json") for p in providers]})
        return
    table = Table(title=f"Quality of {len(providers)} providers' last runs")
    for column in ("provider", "health", "resolved", "rejects", "unknown GPUs", "drift", "flagged"):
        table.add_column(column)
    for p in providers:
        table.add_row(
            p.provider,
            p.health,
            "-" if p.resolved_share is None else f"{p.resolved_share:.0%}",
            str(p.reject_count),
            str(p.unknown_names),
            str(p.drift),
            str(len(p.flagged_offers)),
        )
    out.print(table)
    for p in providers:  # the details, one line each
        for reason in p.reasons:
            out.print(f"{p.provider} degraded: {reason}", highlight=False, soft_wrap=True)
        for u in p.unknown_gpus:
            out.print(f"{p.provider} unknown GPU {u.gpu_raw!r}: {u.offer_count} offers, e.g. "
                      f"{u.example_offer_id}", highlight=False, soft_wrap=True)  # fmt: skip
        for o in p.flagged_offers:
            hold = " (held out of offers, quotes and the index)" if o.suspect else ""
            price, median = o.price_per_gpu_hour, o.median_per_gpu_hour
            out.print(f"{p.provider} offer {o.offer_id}: {o.side} outlier ${price:.2f} vs median "
                      f"${median:.2f}{hold}", highlight=False, soft_wrap=True)  # fmt: skip
