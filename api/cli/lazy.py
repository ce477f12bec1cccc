"""A typer group whose commands are imported when one is run, not when the CLI starts.

`gpuprices --help` lists every command by its registered one-line help without importing any
command's module; `gpuprices offers ...` imports `api.cli.offers` (and what it needs) only.
The pattern is click's "lazily loading subcommands", on typer's own command builders.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo

if TYPE_CHECKING:  # typer vendors click as `typer._click`: TyperGroup's commands are its classes
    from typer._click import Command, Context, HelpFormatter

__all__ = ["LazyCommand", "LazyGroup"]


@dataclass(frozen=True)
class LazyCommand:
    """One command: its name, where its function (or sub-Typer) lives, and its one-line help."""

    name: str
    target: str
    """`module:attribute`, a command function or a `typer.Typer` group."""
    short_help: str
    """The line `--help` lists it with (shown without importing `target`)."""


class _Commands(MutableMapping[str, "Command"]):
    """`TyperGroup.commands` that builds a lazy command the first time it is looked up."""

    def __init__(self, group: LazyGroup, built: MutableMapping[str, Command]) -> None:
        self._group = group
        self._built = built

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = self._group.build(self._group.lazy[name])
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._group.lazy
        yield from (name for name in self._built if name not in self._group.lazy)

    def __len__(self) -> int:
        return len(set(self._group.lazy) | set(self._built))


class LazyGroup(TyperGroup):
    """A `TyperGroup` with `commands` listed in `lazy` (a subclass sets it), built on first use
    by typer exactly as `app.command()` / `app.add_typer()` would build them."""

    lazy: dict[str, LazyCommand] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self, self.commands)

    def build(self, entry: LazyCommand) -> Command:
        module, _, attribute = entry.target.partition(":")
        target = getattr(import_module(module), attribute)
        command: Command
        if isinstance(target, typer.Typer):
            command = get_group_from_info(
                TyperInfo(target, name=entry.name),
                pretty_exceptions_short=True,
                suggest_commands=self.suggest_commands,
                rich_markup_mode=self.rich_markup_mode,
            )
        else:
            command = get_command_from_info(
                CommandInfo(name=entry.name, callback=target),
                pretty_exceptions_short=True,
                rich_markup_mode=self.rich_markup_mode,
            )
        command.short_help = entry.short_help
        return command

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The command list from the registered lines: nothing is imported to print it."""
        built = self.commands._built if isinstance(self.commands, _Commands) else self.commands
        rows = []
        for name in self.list_commands(ctx):
            if name in built:
                if built[name].hidden:
                    continue
                rows.append((name, built[name].get_short_help_str(formatter.width)))
            else:
                rows.append((name, self.lazy[name].short_help))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
