"""The CLI reference page, read from the typer app itself (`docs/generate.py` writes it).

Per command, as a page reads rather than a terminal prints: its synopsis (the usage line), its
description (the docstring's paragraphs), its arguments and an options table (option, type,
default, what it does); a group lists its commands, each a link to its own section. Types are
read from each option's annotation: an enum or Literal lists its values, a number its bounds.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from docs.markdown_text import cell, number, values

__all__ = ["cli_page", "walk"]


def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The command and every visible subcommand under it, depth first in the group's order."""
    yield path, command
    if hasattr(command, "list_commands"):
        ctx = command.context_class(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, (*path, name))


def _anchor(path: tuple[str, ...]) -> str:
    """The id MkDocs' toc gives the heading "`gpuprices alerts add`"."""
    return "-".join(path).lower()


def _bounds(parameter: Any) -> str:
    low, high = getattr(parameter, "min", None), getattr(parameter, "max", None)
    if low is not None and high is not None:
        return f" ({number(low)}–{number(high)})"
    if low is not None:
        return f" (≥ {number(low)})"
    if high is not None:
        return f" (≤ {number(high)})"
    return ""


def _annotation_text(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return " or ".join(_annotation_text(a) for a in options)
    if origin is Literal:
        return values(list(get_args(annotation)))
    if origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        return _annotation_text(args[0]) if args else "text"
    if isinstance(annotation, type):
        if issubclass(annotation, Enum):
            return values([member.value for member in annotation])
        if issubclass(annotation, bool):
            return "flag"
        if issubclass(annotation, int):
            return "integer"
        if issubclass(annotation, float):
            return "number"
        if issubclass(annotation, Path):
            return "path"
        if issubclass(annotation, str):
            return "text"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _type(parameter: Any) -> str:
    descriptor = getattr(parameter, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", str)
    text = _annotation_text(annotation)
    if text in ("integer", "number"):
        text += _bounds(parameter)
    if getattr(parameter, "multiple", False):
        text += ", repeatable"
    return text


def _default(parameter: Any) -> str:
    shown = getattr(parameter, "show_default", None)
    if isinstance(shown, str):
        return shown
    value = parameter.default
    if callable(value):
        return ""
    if isinstance(value, Enum):
        value = value.value
    if getattr(parameter, "is_flag", False):
        if parameter.secondary_opts:
            chosen = parameter.opts if value else parameter.secondary_opts
            return f"`{chosen[0]}`" if value is not None else ""
        return ""  # a plain flag is off unless given
    if value is None or value == () or value == []:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _option_names(parameter: Any) -> str:
    names = sorted(parameter.opts, key=lambda o: (o.startswith("--"), o))  # -p before --provider
    text = ", ".join(f"`{name}`" for name in names)
    if parameter.secondary_opts:
        text += " / " + ", ".join(f"`{name}`" for name in parameter.secondary_opts)
    return text


def _help(parameter: Any) -> str:
    text = getattr(parameter, "help", None) or ""
    envvar = parameter.envvar
    names = [envvar] if isinstance(envvar, str) else list(envvar or ())
    for name in names:
        if name not in text:
            text = f"{text} [env: {name}]".strip()
    if getattr(parameter, "required", False):
        text = f"Required. {text}".strip()
    return text


def _description(command: Any) -> str:
    text = inspect.cleandoc(command.help or "")
    text = "\n".join(line for line in text.splitlines() if line.strip() != "\b")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _section(path: tuple[str, ...], command: Any) -> str:
    name = " ".join(path)
    out = [f"## `{name}`\n\n"]
    with command.context_class(command, info_name=name) as ctx:
        usage = command.get_usage(ctx)
    description = _description(command)
    if description:
        out.append(description + "\n\n")
    out.append(f"```text\n{usage.strip()}\n```\n\n")
    visible = [p for p in command.params if not getattr(p, "hidden", False)]
    arguments = [p for p in visible if not p.opts or not p.opts[0].startswith("-")]
    options = [p for p in visible if p not in arguments]
    if arguments:
        out.append("| Argument | Type | What it is |\n|---|---|---|\n")
        for argument in arguments:
            label = (argument.name or "").upper()
            out.append(f"| `{label}` | {cell(_type(argument))} | {cell(_help(argument))} |\n")
        out.append("\n")
    if options:
        out.append("| Option | Type | Default | What it does |\n|---|---|---|---|\n")
        for option in options:
            out.append(
                f"| {_option_names(option)} | {cell(_type(option))} | "
                f"{cell(_default(option))} | {cell(_help(option))} |\n"
            )
        out.append("\n")
    if hasattr(command, "list_commands"):
        ctx = command.context_class(command)
        out.append("| Command | What it does |\n|---|---|\n")
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            if sub is None or sub.hidden:
                continue
            sub_path = (*path, sub_name)
            summary = sub.get_short_help_str(limit=200)
            out.append(f"| [`{sub_name}`](#{_anchor(sub_path)}) | {cell(summary)} |\n")
        out.append("\n")
    return "".join(out)


def cli_page(root: Any, program: str, header: str) -> str:
    """The whole page for the click command `root` (typer's `get_command(app)`)."""
    out = [
        header,
        f"Every command of `{program}`: what it does, how to call it, and each option with its "
        f"type and default. `{program} COMMAND --help` prints the same in the terminal; every "
        "command also takes `--help`.\n\n",
    ]
    out += [_section(path, command) for path, command in walk(root, (program,))]
    return "".join(out)
