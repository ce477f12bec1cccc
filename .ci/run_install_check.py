"""What `make run`, `make demo`, the image and `gpuprices` import is installed by the run install.

The run install is `pip install '.[lake]'` (the Makefile's run stamp and the Dockerfile): no
`dev` extra, so a module imported at run time whose package only `dev` brings in (PyYAML once)
passes the whole suite and fails on a fresh clone. This builds a throwaway venv with only that
install (`python -m venv`, pip as configured on the machine), then, from outside the source tree
(so the checkout's files cannot stand in for the installed ones):

- imports every module of `api`, `pipeline`, `scrapers` and `warehouse`;
- asks `python -m api --help`, `gpuprices --help` and every command's and sub-command's
  `--help`;
- builds the app (`create_app`) over a new database, runs its lifespan, and asks every GET
  route without a path parameter and `/mcp`'s `initialize` (which loads the MCP SDK), expecting
  no 5xx.

`make check-run-install` runs it; `.ci/run` runs it after `make test`. Exit 1 with the failing
step's output on any failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "pipeline", "scrapers", "warehouse")
STEP_TIMEOUT_S = 600

_IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
failed = []
count = 0
for top in sys.argv[1:]:
    package = importlib.import_module(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if info.name.endswith(".__main__"):  # runs the CLI: asked as `python -m api --help`
            continue
        count += 1
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            failed.append(f"{info.name}: {type(exc).__name__}: {exc}")
        else:
            if not importlib.import_module(info.name).__file__.startswith(sys.prefix):
                failed.append(f"{info.name}: imported from outside the venv")
print(f"{count} modules imported")
if failed:
    sys.exit("modules that do not import in the run install:\\n  " + "\\n  ".join(failed))
"""

_EVERY_HELP = """
import sys
import typer
from typer.testing import CliRunner
from api.cli.commands import app
def walk(command, path):
    yield path
    if hasattr(command, "commands"):  # a group (typer's own click or click's)
        for name, sub in sorted(command.commands.items()):
            yield from walk(sub, [*path, name])
runner = CliRunner()
failed = []
paths = list(walk(typer.main.get_command(app), []))
for path in paths:
    result = runner.invoke(app, [*path, "--help"])
    if result.exit_code != 0:
        failed.append(f"gpuprices {' '.join(path)} --help: exit {result.exit_code} {result.output}")
print(f"{len(paths)} commands answered --help")
if failed:
    sys.exit("commands that fail in the run install:\\n  " + "\\n  ".join(failed))
"""

_APP_ROUTES = """
import sys
from pathlib import Path
from fastapi.testclient import TestClient
from api.app import create_app
from pipeline.settings import Settings

settings = Settings(db=Path(sys.argv[1]), scheduler=False)
app = create_app(settings)
failed = []
asked = 0
with TestClient(app, base_url="http://127.0.0.1:8000") as client:
    paths = app.openapi()["paths"]
    for path, operations in paths.items():
        if "get" not in operations or "{" in path:
            continue
        asked += 1
        status = client.get(path).status_code
        if status >= 500:
            failed.append(f"GET {path}: {status}")
    answer = client.post(
        "/mcp",
        headers={"Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "run-install-check", "version": "0"}}},
    )
    if answer.status_code != 200:
        failed.append(f"POST /mcp initialize: {answer.status_code} {answer.text[:200]}")
print(f"{len(paths)} paths built, {asked} GET routes asked, /mcp initialized")
if failed:
    sys.exit("routes that fail in the run install:\\n  " + "\\n  ".join(failed))
"""


def _step(title: str, command: list[str], cwd: Path, env: dict[str, str]) -> str:
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.stderr.write(f"FAILED: {title} (exit {done.returncode})\n{done.stdout}{done.stderr}\n")
        raise SystemExit(1)
    print(f"ok   {title} ({elapsed:.1f} s)", flush=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the venv and print its path")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpuprices-run-install-"))
    venv = work / "venv"
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["HOME"] = str(work)  # no user configuration of ours (gpuprices reads none from HOME)
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    try:
        _step("venv", [sys.executable, "-m", "venv", str(venv)], work, env)
        _step(
            "pip install '.[lake]' (the run install)",
            [python, "-m", "pip", "install", "--quiet", f"{ROOT}[lake]"],
            work,
            env,
        )
        _step("import every module", [python, "-c", _IMPORT_EVERYTHING, *PACKAGES], work, env)
        gpuprices = str(venv / "bin" / "gpuprices")
        _step("python -m api --help", [python, "-m", "api", "--help"], work, env)
        _step("gpuprices --help", [gpuprices, "--help"], work, env)
        _step("every command's --help", [python, "-c", _EVERY_HELP], work, env)
        _step(
            "create_app, its routes and /mcp",
            [python, "-c", _APP_ROUTES, str(work / "routes.duckdb")],
            work,
            env,
        )
    finally:
        if args.keep:
            print(f"venv kept: {venv}")
        else:
            subprocess.run(["rm", "-rf", str(work)], check=False)
    print("the run install imports and serves everything")


if __name__ == "__main__":
    main()
