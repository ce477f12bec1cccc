"""A quote as a launcher's task file: a SkyPilot task YAML or a dstack `task` configuration.

Both files make the same choices: the quote's cloud, region, GPUs and spot or on-demand (in the
launcher's names, `pipeline.workload.launch`), a disk sized for the model and its checkpoints,
the training settings the estimate assumed as one JSON value in the environment, and a setup step
that writes the layout's Accelerate / DeepSpeed / FSDP config (`pipeline.workload.training`).
Comments say what was priced and when the offer was seen: prices move, and the launcher checks
the offer again when it launches.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from pipeline.catalog import Catalog, get_catalog
from pipeline.errors import LauncherError
from pipeline.workload.launch import Target, target
from pipeline.workload.model import Workload
from pipeline.workload.quotes import QuoteResult
from pipeline.workload.ranking import Quote
from pipeline.workload.training import (
    CONFIG_DIR,
    TRAINING_ENV,
    disk_gb,
    layout_files,
    training_settings,
)

__all__ = ["task_file"]

NAME_CHARS = 40
"""dstack run names: a letter, then up to 40 lower-case letters, digits or dashes."""
TRAIN_SCRIPT = "train.py"
"""The job's own training script, which reads the settings from `TRAINING_ENV`. It travels with
the task: SkyPilot copies the `workdir` (the folder `sky launch` runs in) to the machine and runs
setup and run there; dstack uploads the `files` (relative to the configuration's folder) into the
container's working directory, where its commands run."""
SKYPILOT_WORKDIR = "."


YAML_BREAKS = frozenset("\n\r\x85\u2028\u2029")
"""What YAML reads as a line break (YAML 1.1, which PyYAML and both launchers read)."""
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories never written raw outside a quoted scalar: controls, format characters
(bidirectional overrides, BOM), surrogates, private use, unassigned, line/paragraph separators."""


def _unsafe(ch: str) -> bool:
    return ch in YAML_BREAKS or (ch != "\t" and unicodedata.category(ch) in _UNSAFE)


def _escaped(text: str) -> str:
    """`text` on one line: every YAML line break and control character as its escape."""
    if not any(map(_unsafe, text)):
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii") if _unsafe(ch) else ch
                   for ch in text)  # fmt: skip


class _Dumper(yaml.SafeDumper):
    """Our multi-line scripts (setup, run) as block literals; any string with another line
    break or a control character double-quoted, where YAML escapes them."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    lines = value.split("\n")
    if any(_unsafe(ch) for line in lines for ch in line):
        style: str | None = '"'
    else:
        style = "|" if len(lines) > 1 else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def _name(w: Workload) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"gpuprices-{w.arch.name}-{w.method}".lower()).strip("-")
    return slug[: NAME_CHARS + 1].rstrip("-")


def _packages(settings: Mapping[str, Any]) -> list[str]:
    packages = ["accelerate", "transformers", "datasets", "peft", "trl"]
    if settings["load_in_4bit"]:
        packages.append("bitsandbytes")
    if "deepspeed" in settings["config_files"]:
        packages.append("deepspeed")
    return packages


def _setup_lines(settings: Mapping[str, Any]) -> list[str]:
    """Write the layout's configs (one line each, so they also run as separate commands), then
    install the training stack."""
    lines = [f"mkdir -p {CONFIG_DIR}"]
    for path, text in layout_files(settings).items():
        compact = json.dumps(json.loads(text), separators=(",", ":"))
        lines.append(f"printf '%s\\n' {shlex.quote(compact)} > {path}")
    lines.append("pip install -q " + " ".join(_packages(settings)))
    return lines


def _run_lines(settings: Mapping[str, Any]) -> list[str]:
    accelerate = settings["config_files"]["accelerate"]
    return [
        f'echo "${TRAINING_ENV}"',
        f"accelerate launch --config_file {accelerate} {TRAIN_SCRIPT}",
    ]


def _script_line(where: Target) -> str:
    if where.launcher.key == "skypilot":
        return (
            f"run `sky launch` in the folder that holds {TRAIN_SCRIPT}: workdir "
            f"{SKYPILOT_WORKDIR!r} is copied to the machine and setup and run start in it"
        )
    return (
        f"keep {TRAIN_SCRIPT} beside this file: `files` uploads it to the working directory, "
        "where the commands run"
    )


def _header(result: QuoteResult, quote: Quote, rank: int, where: Target) -> str:
    w, offer = result.workload, quote.offer
    form = f" {offer['form_factor']}" if offer.get("form_factor") else ""
    pricing = "spot" if where.spot else "on-demand"
    place = offer.get("region") or "region not stated"
    observed = offer["observed_at"]
    observed = observed.isoformat() if hasattr(observed, "isoformat") else str(observed)
    low, high = quote.cost_range_usd
    lines = [
        f"gpuprices quote {rank} of {result.ranking.feasible}: {w.arch.name} {w.method}, "
        f"{w.tokens:,} tokens, seq_len {w.seq_len}, micro_batch {w.micro_batch}",
        f"offer: {offer['provider']} {quote.gpus} x {offer['gpu']}{form}, {pricing}, {place} "
        f"(offer {offer['offer_id']}), observed {observed}",
        f"priced: ${float(offer['price_per_hour']):.2f}/h x {quote.hours:.1f} h = "
        f"${quote.cost_usd:.2f} (range ${low:.0f}-${high:.0f}); "
        f"{quote.memory_per_gpu_gib:.1f} GiB per GPU in layout {quote.layout}",
        f"prices move: {where.launcher.title} checks the offer again at launch; re-run the "
        "quote before a long job",
        f"names for {where.launcher.release} (gpuprices pipeline/data/launchers.toml); "
        f"{TRAIN_SCRIPT} is yours: it reads the settings from ${TRAINING_ENV}",
        _script_line(where),
    ]
    if where.region is None:
        lines.append("region: not pinned (the offer or the launcher's names do not say one)")
    else:
        lines.append(f"region {where.region!r} is {where.spelling}")
    if where.zone is not None:
        lines.append(
            f"zone {where.zone!r} is {offer['provider']}'s data centre id, which "
            f"{where.launcher.title} uses unchanged"
        )
    return "".join(f"# {_escaped(line)}\n" for line in lines)


def _skypilot(w: Workload, where: Target, settings: Mapping[str, Any], env: str) -> dict[str, Any]:
    resources: dict[str, Any] = {"cloud": where.cloud}
    if where.region is not None:
        resources["region"] = where.region
    if where.zone is not None:
        resources["zone"] = where.zone
    resources["accelerators"] = f"{where.gpu}:{where.gpu_count}"
    resources["use_spot"] = where.spot
    resources["disk_size"] = disk_gb(w)
    return {
        "name": _name(w),
        "workdir": SKYPILOT_WORKDIR,
        "resources": resources,
        "envs": {TRAINING_ENV: env},
        "setup": "\n".join(_setup_lines(settings)) + "\n",
        "run": "\n".join(_run_lines(settings)) + "\n",
    }


def _dstack(w: Workload, where: Target, settings: Mapping[str, Any], env: str) -> dict[str, Any]:
    vram_gb = settings["vram_gb"]
    gpu: dict[str, Any] = {"name": [where.gpu], "count": where.gpu_count}
    if vram_gb:
        gpu["memory"] = f"{vram_gb:g}GB"
    config: dict[str, Any] = {"type": "task", "name": _name(w), "backends": [where.cloud]}
    if where.region is not None:
        config["regions"] = [where.region]
    config["spot_policy"] = "spot" if where.spot else "on-demand"
    config["resources"] = {"gpu": gpu, "disk": f"{disk_gb(w)}GB"}
    config["env"] = {TRAINING_ENV: env}
    config["files"] = [TRAIN_SCRIPT]
    config["commands"] = _setup_lines(settings) + _run_lines(settings)
    return config


_BUILDERS: Mapping[str, Callable[[Workload, Target, Mapping[str, Any], str], dict[str, Any]]] = {
    "skypilot": _skypilot,
    "dstack": _dstack,
}


def _pick(result: QuoteResult, pick: int) -> Quote:
    quotes = result.ranking.quotes
    if not quotes:
        raise LauncherError("pick", "no offer can run this job, so there is nothing to launch")
    if not 1 <= pick <= len(quotes):
        raise LauncherError(
            "pick",
            f"pick {pick}: only {len(quotes)} offers can run the job; choose 1 to {len(quotes)}",
        )
    return quotes[pick - 1]


def task_file(
    result: QuoteResult, launcher: str, pick: int = 1, catalog: Catalog | None = None
) -> str:
    """The task file (YAML text) that runs quote number `pick` (1: the cheapest) under
    `launcher` (`skypilot` or `dstack`)."""
    cat = catalog or get_catalog()
    quote = _pick(result, pick)
    where = target(launcher, quote.offer, rank=pick)
    settings = training_settings(result.workload, quote, cat)
    env = json.dumps(settings, separators=(",", ":"))
    variants = cat.variants_of(str(quote.offer["gpu"]))
    extra = {"vram_gb": variants[0].vram_gb if variants else None}
    body = _BUILDERS[where.launcher.key](result.workload, where, {**settings, **extra}, env)
    text = _header(result, quote, pick, where) + yaml.dump(
        body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000
    )
    if yaml.safe_load(text) != body:  # the comments hold no structure, the values are exact
        raise RuntimeError("a task file did not read back as the values it was built from")
    return text
