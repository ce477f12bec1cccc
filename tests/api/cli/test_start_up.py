"""The CLI starts without its heavy dependencies: they load with the command that needs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from api.cli.commands import COMMANDS, app

ROOT = Path(__file__).resolve().parents[3]

HEAVY = (
    "duckdb",
    "fastapi",
    "pyarrow",
    "pydantic",
    "httpx",
    "yaml",
    "msgspec",
    "pipeline",
    "warehouse",
    "scrapers",
    "api.app",
)


def loaded_after(code: str) -> set[str]:
    """The heavy modules a fresh interpreter holds after running `code` (this checkout first)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    modules = json.loads(result.stdout.splitlines()[-1])
    return {m for m in modules if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))}


def cli_run(*args: str) -> str:
    """Code that runs `gpuprices ARGS` as the installed script does (`main()`)."""
    return (
        f"import sys\nfrom api.cli.commands import main\nsys.argv = ['gpuprices', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )


def test_importing_the_cli_loads_none_of_the_heavy_modules():
    assert loaded_after("import api.cli.commands") == set()


def test_help_lists_every_command_without_loading_them():
    assert loaded_after(cli_run("--help")) == set()


def test_running_a_command_loads_what_it_needs():
    assert "duckdb" in loaded_after(cli_run("offers", "--help"))


def test_each_listed_line_is_the_command_it_loads():
    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    assert root.list_commands(ctx) == [command.name for command in COMMANDS]
    listed = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"}).output
    for command in COMMANDS:
        built = root.get_command(ctx, command.name)
        assert built is not None and built.name == command.name
        assert built.get_short_help_str() == command.short_help
        assert f"{command.name}  " in listed and command.short_help in listed


def test_a_mistyped_command_still_suggests_the_right_one():
    result = CliRunner().invoke(app, ["ofers"])
    assert result.exit_code == 2
    assert "Did you mean 'offers'?" in result.output
