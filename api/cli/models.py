"""`gpuprices models`: the model catalog as `GET /models` gives it, as a table or JSON."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from api.cli.common import out
from api.cli.offers import print_json
from api.rest.schemas_models import ModelOut, models_page

__all__ = ["ModelsFormat", "models"]


class ModelsFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


def _context(model: ModelOut) -> str:
    n = model.context_length
    if n is None:
        return "?"
    return f"{n // 1024}k" if n % 1024 == 0 else f"{n:,}"


def models(
    fmt: Annotated[ModelsFormat, typer.Option("--format", help="table or json")] = (
        ModelsFormat.TABLE
    ),
) -> None:
    """The models a quote knows by name: total and active parameters, dense or MoE, context
    length and the config.json each comes from."""
    page = models_page()
    if fmt is ModelsFormat.JSON:
        print_json(page.model_dump(mode="json"))
        return
    table = Table(title=f"{page.count} models", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("model", "Hugging Face id", "kind", "total B", "active B", "context", "source"):
        wrapped = column in ("Hugging Face id", "source")
        table.add_column(
            column,
            overflow="fold",
            no_wrap=not wrapped,
            justify="right" if column in ("total B", "active B", "context") else "left",
            ratio=2 if column == "source" else None,
        )
    for m in page.models:
        experts = f" {m.experts.num_experts_per_tok}/{m.experts.num_experts}" if m.experts else ""
        table.add_row(
            m.name,
            m.hub_id or "",
            m.kind + experts,
            f"{m.total_params_b:,.2f}",
            f"{m.active_params_b:,.2f}",
            _context(m),
            m.source,
        )
    out.print(table)
    out.print(
        "active B includes the input embedding; JSON also gives it without "
        "(active_params_b_without_input_embedding) and the model card's own counts",
        highlight=False,
        soft_wrap=True,
    )
