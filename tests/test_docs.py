"""The documentation site builds strictly (no broken link, no missing page) and its reference
pages say what the code says: every CLI command and option, every setting's variable and every
API path appear in the built site."""

from __future__ import annotations

import os
import re
from html import unescape
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[1]
MKDOCS_CONFIG = ROOT / "docs" / "mkdocs.yml"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    out = tmp_path_factory.mktemp("site")
    config = load_config(config_file=str(MKDOCS_CONFIG), site_dir=str(out), strict=True)
    build(config)  # strict: a warning (broken link, page missing from nav) raises
    pages = [unescape(page.read_text(encoding="utf-8")) for page in out.rglob("*.html")]
    return "\n".join(pages)


def _commands():
    from api.cli.commands import app

    stack = [("gpuprices", typer.main.get_command(app))]
    while stack:
        name, command = stack.pop()
        yield name, command
        if hasattr(command, "list_commands"):
            ctx = command.context_class(command)
            for sub in command.list_commands(ctx):
                stack.append((f"{name} {sub}", command.get_command(ctx, sub)))


def test_every_cli_command_and_option_is_in_the_site(site: str) -> None:
    missing = []
    for name, command in _commands():
        if f"Usage: {name}" not in site:
            missing.append(name)
        for parameter in command.params:
            missing += [
                f"{name} {opt}" for opt in parameter.opts if opt.startswith("-") and opt not in site
            ]
    assert missing == []


def test_every_setting_variable_is_in_the_site(site: str) -> None:
    from pipeline.settings import Settings

    missing = [name for name in Settings.model_fields if f"GPUPRICES_{name.upper()}" not in site]
    assert missing == []


def test_every_api_path_is_in_the_site(site: str, tmp_path: Path) -> None:
    from api.app import create_app
    from pipeline.settings import Settings

    paths = create_app(Settings(db=tmp_path / "docs.duckdb", scheduler=False)).openapi()["paths"]
    missing = [
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        for method in operations
        if f"{method.upper()} {path}" not in site
    ]
    assert missing == []


def test_a_changed_setting_default_shows_in_the_next_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from docs.generate import settings_reference
    from pipeline.settings import Settings

    monkeypatch.setattr(Settings.model_fields["port"], "default", 8123)
    row = next(line for line in settings_reference().splitlines() if "`GPUPRICES_PORT`" in line)
    assert re.search(r"\b8123\b", row)
