"""SkyPilot and dstack in throwaway venvs, to read our task files with the launchers' own code.

Never in `.venv`: their dependencies (pandas, pydantic, ...) would change ours. Each launcher
gets `<repo>/.cache/launchers/<package>-<version>/` (gitignored), created with `python -m venv`
and pip from PyPI on first use, then reused while its `.installed` marker names the same pinned
release (`pipeline/data/launchers.toml`). The checks run there as subprocesses with a throwaway
HOME, usage collection off and every socket connection refused: no catalog download, no cloud.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.workload.launch import Launcher

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".cache" / "launchers"
CHECKS = Path(__file__).parent / "fixtures" / "launchers"
INSTALL_TIMEOUT_S = 1800
CHECK_TIMEOUT_S = 600
QUIET_ENV = {
    "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
    "SKYPILOT_DEBUG": "0",
    "DSTACK_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def _bin(venv: Path) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / "python"


def launcher_python(launcher: Launcher) -> Path:
    """The launcher's venv interpreter, installing the pinned release the first time."""
    spec = f"{launcher.package}=={launcher.version}"
    venv = VENVS / f"{launcher.package}-{launcher.version}"
    marker = venv / ".installed"
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == spec:
        return _bin(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(_bin(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec],
        check=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    marker.write_text(spec + "\n", encoding="utf-8")
    return _bin(venv)


def read_with_launcher(
    launcher: Launcher, paths: Sequence[Path], home: Path
) -> list[dict[str, Any]]:
    """What the launcher's own parser read from each task file (see fixtures/launchers/)."""
    python = launcher_python(launcher)
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **QUIET_ENV}
    done = subprocess.run(
        [str(python), str(CHECKS / f"check_{launcher.key}.py"), *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=CHECK_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{launcher.release} rejected a task file:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
