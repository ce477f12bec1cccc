"""`gpuprices quote`: where a fine-tuning job is cheapest now, or whether it fits given hardware.

A plain function, registered by `api/cli/commands.py` with `app.command("quote")(quote)`; it imports
nothing from `api.cli.commands`, so it handles our errors itself: a bad workload is a usage error
(exit 2, naming the option), any other of our errors one red line and exit 1.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich import box
from rich.table import Table

from api.cli.common import (
    ConfigOption,
    DbOption,
    err,
    load_settings,
    open_existing,
    out,
    print_error,
)
from api.cli.remote import ApiOption, remote_for
from api.cli.scope import scope_options
from api.rest.schemas_quotes import (
    MAX_PARAMS_B,
    MAX_TOP,
    HardwareOut,
    QuotesOut,
    hardware_out,
    quotes_out,
)
from pipeline.errors import PipelineError, UnknownGpuError, WorkloadError
from pipeline.market.scope import OfferScope
from pipeline.workload.architectures import model_key
from pipeline.workload.hub import ModelHub
from pipeline.workload.model import (
    LayoutChoice,
    LoraTargets,
    Method,
    Optimizer,
    Precision,
    Profile,
    Workload,
)
from pipeline.workload.quotes import QUOTE_SCOPE, QuoteRequest, check_hardware, quote_offers
from pipeline.workload.task_files import task_file
from scrapers.models import FormFactor
from warehouse import WarehouseError

__all__ = ["Emit", "QuoteFormat", "quote"]


class QuoteFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


class Emit(StrEnum):
    """The launchers a quote can be written for (`pipeline.workload.launch.LAUNCHERS`)."""

    SKYPILOT = "skypilot"
    DSTACK = "dstack"


_OPTION_OF = {"config": "--hf-config"}
"""Workload fields whose option is spelled otherwise (`--config` is the settings file)."""


def _option(field: str) -> str:
    return _OPTION_OF.get(field, "--" + field.replace("_", "-"))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}", param_hint="--hf-config") from None
    if not isinstance(config, dict):
        raise typer.BadParameter(f"{path} is not a JSON object", param_hint="--hf-config")
    return config


def _print_json(model: QuotesOut | HardwareOut) -> None:
    data = model.model_dump(mode="json")
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


_SHARDED = {
    "ddp": "a full copy on each GPU (data parallel)",
    "zero1": "optimizer states split across the GPUs (ZeRO-1)",
    "zero2": "gradients and optimizer states split across the GPUs (ZeRO-2)",
    "zero3": "weights, gradients and optimizer states split across the GPUs (ZeRO-3)",
    "fsdp": "weights, gradients and optimizer states split across the GPUs (FSDP)",
    "expert-parallel": "the experts split across the GPUs (expert parallel), the rest and the "
    "optimizer states sharded",
}


def layout_words(layout: str, gpus: int) -> str:
    """`zero3+offload` on 8 GPUs, in words."""
    sharding, _, offload = layout.partition("+")
    if gpus <= 1 or sharding in ("none", "offload"):
        words = "the whole job on one GPU"
    else:
        words = f"{gpus} GPUs, " + _SHARDED.get(sharding, sharding)
    if offload or sharding == "offload":
        words += "; optimizer states in CPU RAM (offload)"
    return words


def _model_line(model: QuotesOut | HardwareOut, asked: str | None) -> str:
    w = model.workload
    line = f"model {w.model} ({w.params_b:g} B parameters, {w.method}"
    line += f", {w.trainable_params_m:,.1f} M trained)" if w.method != "full" else ")"
    if asked and model_key(asked) != model_key(w.model):
        line += f"; {asked} uses the {w.model} architecture (same shape)"
    return line


def _memory_line(model: QuotesOut | HardwareOut) -> str:
    m = model.memory
    parts = ", ".join(f"{k} {v:.1f}" for k, v in m.breakdown.model_dump().items())
    return (
        f"memory: {m.per_gpu_gib:.1f} GiB per GPU with {layout_words(m.layout, m.n_gpus)} "
        f"({parts} GiB)"
    )


def _print_hardware(result: HardwareOut) -> None:
    fit = result.fit
    verdict = "[green]fits[/green]" if fit.fits else "[red]does not fit[/red]"
    out.print(
        f"{result.workload.model} {result.workload.method} on {fit.gpus} × {fit.gpu}: {verdict}"
    )
    out.print(_memory_line(result), highlight=False, soft_wrap=True)
    out.print(f"usable {fit.usable_gib:.1f} GiB per GPU, headroom {fit.headroom:.0%}")
    out.print(f"fewest GPUs that fit: {fit.min_gpus if fit.min_gpus is not None else 'none'}")
    if fit.hours is not None and fit.hours_range is not None:
        lo, hi = fit.hours_range
        form = f" {fit.form_factor}" if fit.form_factor else ""
        out.print(
            f"about {fit.hours:.1f} h ({lo:.1f}–{hi:.1f} h), {fit.tokens_per_s:,.0f} tokens/s "
            f"in layout {fit.layout} on{form} {fit.gpu}"
        )
        if fit.hours_basis:
            out.print(f"hours: {fit.hours_basis}", highlight=False, soft_wrap=True)
    for line in (fit.reason, *fit.suggestions, *fit.notes):
        if line:
            out.print(f"- {line}", highlight=False, soft_wrap=True)


def _print_quotes(result: QuotesOut) -> None:
    m = result.memory
    parts = ", ".join(f"{k} {v:.1f}" for k, v in m.breakdown.model_dump().items())
    out.print(
        f"memory: the job on one GPU needs {m.per_gpu_gib:.1f} GiB ({parts} GiB); on smaller "
        "GPUs it is split as each layout below says",
        highlight=False,
        soft_wrap=True,
    )
    table = Table(
        title=f"{len(result.quotes)} of {result.count} offers that can run it",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in ("#", "offer", "$/h", "hours", "cost $", "range $", "GiB/GPU", "layout"):
        wrapped = column in ("offer", "layout")
        table.add_column(
            column,
            overflow="fold" if wrapped else "ellipsis",
            no_wrap=not wrapped,
            justify="left" if wrapped else "right",
        )
    for rank, q in enumerate(result.quotes, 1):
        lo, hi = q.cost_range_usd
        spot = " spot ⚠" if q.interruption_risk else (" spot" if q.offer.pricing == "spot" else "")
        table.add_row(
            str(rank),
            f"{q.offer.provider} {q.gpus}× {q.offer.gpu or q.offer.gpu_raw}{spot}",
            f"{q.offer.price_per_hour:.2f}",
            f"{q.hours:.1f}",
            f"{q.cost_usd:.2f}",
            f"{lo:.0f}–{hi:.0f}",
            f"{q.memory_per_gpu_gib:.1f}",
            q.layout,
        )
    out.print(table)
    for layout, gpus in dict.fromkeys((q.layout, q.gpus) for q in result.quotes):
        out.print(f"layout {layout} on {gpus}: {layout_words(layout, gpus)}", highlight=False)
    for basis in dict.fromkeys(q.hours_basis for q in result.quotes):
        ranks = ", ".join(f"#{r}" for r, q in enumerate(result.quotes, 1) if q.hours_basis == basis)
        out.print(f"hours of {ranks}: {basis}", highlight=False, soft_wrap=True)
    for rank, q in enumerate(result.quotes, 1):
        for note in q.notes:
            out.print(f"#{rank}: {note}", highlight=False, soft_wrap=True)
    if any(q.interruption_risk for q in result.quotes):
        err.print(f"⚠ {result.quotes[0].interruption_risk or 'spot offers can be interrupted'}")
    for s in result.skipped:
        err.print(f"[yellow]skipped[/yellow] {s.offers} × {s.gpu}: {s.reason}", soft_wrap=True)


@scope_options(QUOTE_SCOPE - {"gpu"})  # --gpu here picks the hardware to check
def quote(
    scope: OfferScope,
    model: Annotated[
        str | None,
        typer.Option(
            help="A listed model (gpuprices models), e.g. Llama-3.1-8B, or any Hugging Face id "
            "(owner/name: its config.json is fetched once and kept beside the database)"
        ),
    ] = None,
    hf_config: Annotated[
        Path | None,
        typer.Option("--hf-config", help="The model's Hugging Face config.json, for other models"),
    ] = None,
    params_b: Annotated[
        float | None,
        typer.Option(
            "--params-b", max=MAX_PARAMS_B, help="Size in billions (fallback architecture)"
        ),
    ] = None,
    method: Annotated[Method | None, typer.Option(help="full, lora or qlora")] = None,
    tokens: Annotated[
        str | None, typer.Option(help="Training tokens (dataset × epochs): 50M, 1.5B")
    ] = None,
    seq_len: Annotated[int, typer.Option(help="Tokens per sequence")] = 2048,
    micro_batch: Annotated[int, typer.Option(help="Sequences per GPU per step")] = 1,
    grad_ckpt: Annotated[
        bool, typer.Option("--grad-ckpt/--no-grad-ckpt", help="Gradient checkpointing")
    ] = True,
    optimizer: Annotated[
        Optimizer, typer.Option(help="adamw, adamw_8bit or paged_adamw")
    ] = "adamw",
    lora_rank: Annotated[int, typer.Option(help="LoRA rank (lora, qlora)")] = 16,
    profile: Annotated[
        Profile, typer.Option(help="hf (Transformers + PEFT) or fused (unsloth, Liger, torchtune)")
    ] = "hf",
    precision: Annotated[Precision, typer.Option(help="bf16 or fp16")] = "bf16",
    packing: Annotated[
        bool | None,
        typer.Option(
            "--packing/--no-packing",
            help="Samples packed into full sequences, or padded one per sequence [default: "
            "unstated: hours for packed, range up to padded]",
            show_default=False,
        ),
    ] = None,
    flash_attention: Annotated[
        bool,
        typer.Option(
            "--flash-attention/--no-flash-attention", help="FlashAttention-2 where the GPU has it"
        ),
    ] = True,
    lora_targets: Annotated[
        LoraTargets,
        typer.Option(
            help="LoRA on all linear layers but a MoE model's routed experts (all), on "
            "attention (q, k, v, o), or on every expert too (experts)"
        ),
    ] = "all",
    experts_bits: Annotated[
        int,
        typer.Option(
            "--experts-bits",
            help="QLoRA on a MoE model: routed experts in 4 bit (axolotl, Unsloth) or 16 "
            "(Transformers v5 fused experts, skipped by bitsandbytes)",
        ),
    ] = 4,
    layout: Annotated[
        LayoutChoice,
        typer.Option(
            help="auto (the first that fits), ddp, zero2, zero3, fsdp or expert-parallel (MoE)"
        ),
    ] = "auto",
    gpu: Annotated[
        str | None, typer.Option(help="With --gpus: check this GPU instead of ranking offers")
    ] = None,
    gpus: Annotated[int | None, typer.Option(help="1, 2, 4, 8 or a multiple of 8 (≤ 1024)")] = None,
    form_factor: Annotated[
        FormFactor | None,
        typer.Option(
            "--form-factor",
            help="With --gpu: SXM, PCIe or NVL [default: as the name says, else the faster, "
            "with a range over both]",
            show_default=False,
            case_sensitive=False,
        ),
    ] = None,
    top: Annotated[int, typer.Option(min=1, max=MAX_TOP, help="Quotes to show")] = 10,
    include_spot: Annotated[
        bool, typer.Option(help="Also rank spot offers, with their risk")
    ] = False,
    max_hours: Annotated[float | None, typer.Option(min=0, help="Leave out slower offers")] = None,
    max_cost: Annotated[
        float | None, typer.Option(min=0, help="Leave out dearer offers, USD")
    ] = None,
    fmt: Annotated[QuoteFormat, typer.Option("--format")] = QuoteFormat.TABLE,
    emit: Annotated[
        Emit | None,
        typer.Option(
            help="Print a SkyPilot task YAML or a dstack task configuration for one quote",
            case_sensitive=False,
        ),
    ] = None,
    pick: Annotated[
        int, typer.Option(min=1, max=MAX_TOP, help="With --emit: which quote (1: the cheapest)")
    ] = 1,
    db: DbOption = None,
    config: ConfigOption = None,
    api: ApiOption = None,
) -> None:
    """What a fine-tuning job needs, and where it is cheapest in total right now."""
    if method is None:
        raise typer.BadParameter("full, lora or qlora is required", param_hint="--method")
    if gpus is not None and gpu is None:
        raise typer.BadParameter("--gpus needs --gpu", param_hint="--gpus")
    if form_factor is not None and gpu is None:
        raise typer.BadParameter("--form-factor needs --gpu", param_hint="--form-factor")
    if emit is not None and gpu is not None:
        raise typer.BadParameter("--emit writes a ranked quote; drop --gpu", param_hint="--emit")
    if emit is not None:
        top = max(top, pick)
    hf_config_body = _read_config(hf_config) if hf_config is not None else None
    workload_fields: dict[str, Any] = {
        "model": model,
        "params_b": params_b,
        "method": method,
        "tokens": tokens,
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "grad_ckpt": grad_ckpt,
        "optimizer": optimizer,
        "lora_rank": lora_rank,
        "profile": profile,
        "precision": precision,
        "packing": packing,
        "flash_attention": flash_attention,
        "lora_targets": lora_targets,
        "experts_bits": experts_bits,
        "layout": layout,
    }
    try:  # checked here first: a bad workload is a usage error naming the option
        settings = load_settings(db, config)
        hub = ModelHub.from_env(settings.model_configs_dir)
        workload = Workload.build(config=hf_config_body, hub=hub, **workload_fields)
        if gpu is not None:
            form = str(form_factor) if form_factor else None
            result: QuotesOut | HardwareOut = hardware_out(
                workload, check_hardware(workload, gpu, gpus, form_factor=form)
            )
        else:
            if workload.tokens is None:
                raise WorkloadError("tokens", "needed to rank offers by total cost, e.g. 50M")
            request = QuoteRequest(
                workload,
                scope=scope,
                max_hours=max_hours,
                max_cost_usd=max_cost,
                include_spot=include_spot,
                top=top,
            )
            remote = remote_for(settings, api)
            if remote is not None:
                body = {
                    **scope.model_dump(mode="json", by_alias=True, exclude_defaults=True),
                    **{k: v for k, v in workload_fields.items() if v is not None},
                    "config": hf_config_body,
                    "max_hours": max_hours,
                    "max_cost_usd": max_cost,
                    "include_spot": include_spot,
                    "top": top,
                }
                if emit is not None:
                    body |= {"launcher": str(emit), "pick": pick}
                    text = remote.request("POST", "/quotes/task", json_body=body)
                    sys.stdout.write(text.decode() if isinstance(text, bytes) else str(text))
                    return
                answer = remote.request("POST", "/quotes", json_body=body)
                result = QuotesOut.model_validate(answer)
            elif emit is not None:
                with open_existing(settings) as warehouse:
                    ranked = quote_offers(warehouse, request, with_history=False)
                sys.stdout.write(task_file(ranked, str(emit), pick))
                return
            else:
                with open_existing(settings) as warehouse:
                    result = quotes_out(quote_offers(warehouse, request))
    except WorkloadError as exc:
        raise typer.BadParameter(exc.detail, param_hint=_option(exc.field)) from None
    except UnknownGpuError as exc:
        raise typer.BadParameter(str(exc), param_hint="--gpu") from None
    except (PipelineError, WarehouseError) as exc:
        print_error(exc)
        raise typer.Exit(getattr(exc, "exit_code", 1)) from None
    if fmt is QuoteFormat.JSON:
        _print_json(result)
        return
    out.print(_model_line(result, model), highlight=False, soft_wrap=True)
    if isinstance(result, HardwareOut):
        _print_hardware(result)
    else:
        _print_quotes(result)
