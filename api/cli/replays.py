"""`collect --replay NAME=FILE`: recorded answers instead of the network (NAME=DIR for a
provider that replays a directory of answers, such as Scaleway; or a bare folder of
`<provider>.<ext>` answers, as `gpuprices demo` ships them)."""

from __future__ import annotations

from pathlib import Path

import typer

from pipeline.collection.demo import demo_bodies
from scrapers import sources
from scrapers.registry import replay_handler

__all__ = ["parse_replays"]


def parse_replays(values: list[str]) -> dict[str, Path]:
    """Each `NAME=FILE` (or `NAME=DIR`) checked: a known provider, an existing file, or a
    directory for a provider that replays one."""
    replays: dict[str, Path] = {}
    for value in values:
        name, sep, file = value.partition("=")
        if not sep and Path(value).is_dir():
            found = demo_bodies(Path(value))
            if not found:
                raise typer.BadParameter(
                    f"{value} holds no <provider>.<ext> file (vastai.json, ...)",
                    param_hint="--replay",
                )
            replays.update(found)
            continue
        if not sep or not name or not file:
            raise typer.BadParameter(
                f"'{value}' is not NAME=FILE or a folder", param_hint="--replay"
            )
        path = Path(file)
        source = sources().get(name)
        if source is None:
            known = ", ".join(sorted(sources()))
            raise typer.BadParameter(
                f"unknown provider '{name}' (known: {known})", param_hint="--replay"
            )
        if path.is_dir():
            try:  # a provider of many answers (Scaleway) replays a directory of them
                replay_handler(source)
            except ValueError as exc:
                raise typer.BadParameter(str(exc), param_hint="--replay") from None
        elif not path.is_file():
            raise typer.BadParameter(f"no such file: {file}", param_hint="--replay")
        replays[name] = path
    return replays
