"""`gpuprices offers` and `gpuprices gpus`: from the database, or from the server that holds it.

Both answers go through the API's response models (`OffersPage`, `GpusPage`), so the JSON a
command prints is what `GET /offers` or `GET /gpus` returns, whichever way it was answered.
"""

from __future__ import annotations

import io
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

import orjson
import typer
from pydantic import ValidationError
from rich import box
from rich.table import Table

from api.cli.common import (
    ConfigOption,
    DbOption,
    SafeCsvWriter,
    load_settings,
    option_time,
    out,
    print_error,
    user_errors,
)
from api.cli.remote import ApiOption, answered, query_params, remote_for
from api.cli.scope import scope_options, validation_line
from api.rest.parameters import MAX_OFFERS_PAGE
from api.rest.schemas import GpuOut, GpusPage, OfferOut
from pipeline.market.freshness import provider_freshness
from pipeline.market.offers import OfferQuery, gpu_specs
from pipeline.market.scope import ALL_SCOPE, OfferScope
from pipeline.market.serving import OfferServer
from warehouse import Warehouse
from warehouse.offers import SORT_FIELDS

__all__ = ["OutputFormat", "cell", "gpus", "offers", "offers_table", "print_json"]


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


class OffersFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    JSONL = "jsonl"
    CSV = "csv"


_SORT_HELP = (
    f"Order by {', '.join(SORT_FIELDS)}; -field for descending (e.g. -reliability); "
    "unknown values last, ties cheapest per GPU-hour first"
)

FormatOption = Annotated[OutputFormat, typer.Option("--format")]


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


@user_errors
@scope_options(ALL_SCOPE)
def offers(
    scope: OfferScope,
    sort: Annotated[str, typer.Option(help=_SORT_HELP)] = "price_per_gpu_hour",
    limit: Annotated[
        int | None,
        typer.Option(min=1, max=MAX_OFFERS_PAGE, help=f"Most offers [default: {MAX_OFFERS_PAGE}]"),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="The offers as they stood then: 2026-01-01, an ISO time, 2h"),
    ] = None,
    fmt: Annotated[
        OffersFormat, typer.Option("--format", help="jsonl: one offer per line")
    ] = OffersFormat.TABLE,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """List what is on offer now (or as of a time), cheapest per GPU-hour first."""
    try:
        query = OfferQuery(
            **scope.model_dump(),
            sort=sort,
            limit=limit or MAX_OFFERS_PAGE,  # the API's default page
            as_of=option_time(as_of, "--as-of"),
        )
    except ValidationError as exc:  # only --sort is checked here: the scope was checked before
        print_error(ValueError(validation_line(exc)))
        raise typer.Exit(2) from None
    settings = load_settings(db, config)

    def local(warehouse: Warehouse) -> list[dict[str, Any]]:
        now = datetime.now(UTC)
        freshness = provider_freshness(warehouse, settings, now)
        answer = OfferServer(warehouse, settings).answer(query, now, freshness)
        assert answer is not None  # only a ready-only question goes unanswered
        return answer.offers

    found: list[Any] = answered(
        settings, api, lambda remote: remote.get("/offers", query_params(query))["offers"], local
    )
    if fmt is OffersFormat.JSONL:
        for row in found:
            sys.stdout.write(OfferOut.model_validate(row).model_dump_json() + "\n")
        return
    rows = [OfferOut.model_validate(row).model_dump(mode="json") for row in found]
    if fmt is OffersFormat.JSON:
        print_json({"offers": rows})
    elif fmt is OffersFormat.CSV:
        buffer = io.StringIO()
        writer = SafeCsvWriter(buffer, list(OfferOut.model_fields))
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    elif not rows:
        out.print(_no_offers(scope, as_of is not None), highlight=False)
    else:
        out.print(offers_table(rows, sort))


def _no_offers(scope: OfferScope, dated: bool) -> str:
    if scope.given() or dated:
        return "No offers match these filters: loosen them, or add --include-unavailable."
    return (
        "No offers yet: `gpuprices collect` fetches them (or replays recorded answers with "
        "--replay); `gpuprices demo` shows the product on recorded data."
    )


_NUMERIC = ("$/GPU-h", "$/h", "GPUs")
_SORTED_BY = {"price_per_gpu_hour": "$/GPU-h", "price_per_hour": "$/h", "gpu_count": "GPUs"}
"""The column a sort field is shown in, marked ▲ (ascending) or ▼ (descending)."""
_WRAPPED = ("GPU", "region", "state")
"""Columns that wrap when 80 columns are tight; prices and names never do."""


def offers_table(rows: list[dict[str, Any]], sort: str = "price_per_gpu_hour") -> Table:
    """Fits 80 columns: both prices (per GPU-hour and per instance-hour), the sort column
    marked, availability and staleness in one `state` column, long names wrapped; the rest is in
    `--format json|csv`."""
    observed = sorted({row["observed_at"] for row in rows})
    caption = f"observed {observed[0]} .. {observed[-1]}" if observed else None
    stale = sum(row["stale"] for row in rows)
    title = f"{len(rows)} offers" + (f", {stale} stale" if stale else "")
    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0))
    marked = _SORTED_BY.get(sort.lstrip("-"))
    arrow = "▼" if sort.startswith("-") else "▲"
    for header in ("GPU", "provider", "pricing", "$/GPU-h", "$/h", "GPUs", "region", "state"):
        if header == marked:
            header = f"{header}{arrow}"
        if header in _WRAPPED:  # words wrap; only a word longer than the column is cut
            table.add_column(header, overflow="fold", min_width=9)
        else:
            justify: Literal["right", "left"] = (
                "right" if header.rstrip("▲▼") in _NUMERIC else "left"
            )
            table.add_column(header, no_wrap=True, justify=justify)
    for row in rows:
        gpu = row["gpu"] or f"{row['gpu_raw']} (?)"
        if row["form_factor"]:
            gpu += f" {row['form_factor']}"
        state = "available" if row["available"] else "sold out"
        if row["stale"]:
            state += " [yellow]STALE[/yellow]"
        seller = row.get("seller")
        table.add_row(
            gpu,
            f"{row['provider']}\nvia {seller}" if seller else row["provider"],
            "spot" if row["pricing"] == "spot" else "on-demand",
            f"{row['price_per_gpu_hour']:.4f}",
            f"{row['price_per_hour']:.2f}",
            str(row["gpu_count"]),
            row["region"] or "-",
            state,
        )
    return table


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if value < 1000 else f"{value:.0f}"
    return str(value)


@user_errors
def gpus(
    fmt: FormatOption = OutputFormat.TABLE,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """The GPU catalog: canonical ids, VRAM, form factors, TFLOPs and aliases."""
    remote = remote_for(load_settings(None, config), api) if api else None
    if remote is not None:
        page = GpusPage.model_validate(remote.get("/gpus"))
    else:
        found = [GpuOut.model_validate(asdict(spec)) for spec in gpu_specs()]
        page = GpusPage(gpus=found, count=len(found))
    specs = [gpu.model_dump(mode="json") for gpu in page.gpus]
    if fmt is OutputFormat.JSON:
        print_json(page.model_dump(mode="json"))
        return
    if fmt is OutputFormat.CSV:
        writer = SafeCsvWriter(sys.stdout)
        writer.writerow(list(specs[0]))
        writer.writerows(
            ["|".join(v) if isinstance(v, list) else v for v in spec.values()] for spec in specs
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
            cell(spec["vram_gb"]),
            ", ".join(spec["form_factors"]) or "-",
            "yes" if spec["bf16"] else "no (fp16)",
            cell(spec["bf16_tflops_dense"]),
            cell(spec["fp16_tflops_dense"]),
            cell(spec["mem_bw_gbps"]),
        )
    out.print(table)
