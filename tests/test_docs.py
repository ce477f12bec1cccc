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


def _sections(markdown: str) -> dict[str, str]:
    """`## \\`NAME\\`` heading -> the text under it, up to the next such heading."""
    parts = re.split(r"^## `([^`]+)`\n", markdown, flags=re.MULTILINE)
    return {name: text.lstrip("\n") for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_api_reference_lists_every_request_body_field_and_every_enum_value(
    tmp_path: Path,
) -> None:
    from api.app import create_app
    from docs.generate import api_reference
    from pipeline.settings import Settings

    schema = create_app(Settings(db=tmp_path / "docs.duckdb", scheduler=False)).openapi()
    components = schema["components"]["schemas"]
    page = api_reference()
    sections = _sections(page)
    missing = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for content in operation.get("requestBody", {}).get("content", {}).values():
                body = components[content["schema"]["$ref"].rsplit("/", 1)[1]]
                text = sections[f"{method.upper()} {path}"]
                missing += [
                    f"{method.upper()} {path} {name}"
                    for name in body["properties"]
                    if f"| `{name}`" not in text
                ]
    assert missing == []
    enums = {name: s["enum"] for name, s in components.items() if "enum" in s}
    assert enums  # Pricing, FormFactor, AlertKind...
    for name, options in enums.items():
        assert f"One of {', '.join(f'`{v}`' for v in options)}." in page, name
    offers = sections["GET /offers"]
    assert "| `pricing` | query | one of `on_demand`, `spot` or null |" in offers
    assert "| `limit` | query | integer (1–10,000) or null |" in offers
    assert not re.search(r"\| \?|\? or ", page)  # no type left unknown


def test_a_schema_type_reads_as_words() -> None:
    from docs.reference_api import type_text

    components = {"Pricing": {"enum": ["on_demand", "spot"]}, "OfferOut": {"type": "object"}}
    assert type_text({"$ref": "#/components/schemas/Pricing"}, components) == (
        "one of `on_demand`, `spot`"
    )
    assert type_text({"$ref": "#/components/schemas/OfferOut"}, components) == (
        "[`OfferOut`](#offerout)"
    )
    array = {"type": "array", "items": {"$ref": "#/components/schemas/OfferOut"}}
    assert type_text(array, components) == "array of [`OfferOut`](#offerout)"
    number = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}
    ranged = {"anyOf": [number, {"type": "null"}]}
    assert type_text(ranged, components) == "number (> 0, ≤ 1,000,000) or null"
    assert type_text({"type": "string", "format": "date-time"}, components) == (
        "string (date-time)"
    )


def test_the_cli_reference_reads_as_a_page_with_an_options_table_per_command() -> None:
    from docs.generate import cli_reference

    page = cli_reference()
    sections = _sections(page)
    assert {name for name, _ in _commands()} == set(sections)
    for name, text in sections.items():
        assert f"```text\nUsage: {name}" in text, name  # the synopsis
        assert "Options:" not in text and "--help  Show" not in text  # not a help dump
    quote = sections["gpuprices quote"]
    assert quote.startswith("What a fine-tuning job needs")  # the description first
    assert "| `--top` | integer (1–10,000) | `10` |" in quote
    assert "| `--method` | one of `full`, `lora`, `qlora` |" in quote
    assert "| `--grad-ckpt` / `--no-grad-ckpt` | flag | `--grad-ckpt` |" in quote
    assert "| `-p`, `--provider` | text, repeatable |" in sections["gpuprices offers"]
    assert "[`add`](#gpuprices-alerts-add)" in sections["gpuprices alerts"]
    code = re.findall(r"```text\n(.*?)```", page, flags=re.DOTALL)
    assert max(len(line) for block in code for line in block.splitlines()) <= 100


def _table_cells(line: str) -> int:
    """A markdown table row's cell count (a `|` inside backticks or escaped is text)."""
    return len(re.split(r"(?<!\\)\|", re.sub(r"`[^`]*`", "code", line.strip()))) - 2


def test_every_table_row_has_as_many_cells_as_its_header(tmp_path: Path) -> None:
    from docs.generate import REFERENCE, write_reference

    pages = {
        page.relative_to(ROOT): page.read_text(encoding="utf-8")
        for page in [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").rglob("*.md"))]
        if not page.is_relative_to(REFERENCE)  # whatever the last build left there: not checked
    }
    generated = write_reference(tmp_path)  # the reference pages as the code generates them now
    pages |= {(REFERENCE / name).relative_to(ROOT): text for name, text in generated.items()}
    broken = []
    for name, text in pages.items():
        header = None
        for number, line in enumerate(text.splitlines(), 1):
            if not line.startswith("|"):
                header = None
            elif header is None:
                header = _table_cells(line)
            elif (cells := _table_cells(line)) != header:
                broken.append(f"{name}:{number}: {cells} cells, header {header}")
    assert not broken, "\n".join(broken)
