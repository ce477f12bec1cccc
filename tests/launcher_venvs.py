"""SkyPilot and dstack in throwaway venvs, to read our task files with the launchers' own code.

Never in `.venv`: their dependencies (pandas, pydantic, ...) would change ours. Each launcher
gets `<cache>/<package>-<version>-<python>/` (e.g. `skypilot-0.14.1-cpython311`), created with
`python -m venv` and pip from PyPI on first use, then reused by every later run while its
`.installed` marker names the same pinned release (`pipeline/data/launchers.toml`) and Python, and
its interpreter still reports that release installed; anything else (a stale, half-built or
broken venv) is built again. `<cache>` is `$XDG_CACHE_HOME/gpuprices/launchers` when
XDG_CACHE_HOME is set (shared by every clone of the machine's user), else
`<repo>/.cache/launchers` (gitignored). A lock file lets one process build while the others
(another run, another clone) wait. The checks run there as subprocesses with a throwaway HOME,
usage collection off and every socket connection refused: no catalog download, no cloud.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.workload.launch import Launcher

ROOT = Path(__file__).resolve().parents[1]
PYTHON_TAG = f"{sys.implementation.name}{sys.version_info.major}{sys.version_info.minor}"
"""The Python running the tests (`cpython311`): a venv is bound to the Python that made it."""
_READY: dict[str, Path] = {}
"""Interpreters checked this session, by pinned release."""
VERSION_OF = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
"""Run by a cached venv's interpreter: the installed version of the distribution named."""
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


def cache_dir() -> Path:
    """Where the launchers' venvs are kept between runs."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "gpuprices" / "launchers" if xdg else ROOT / ".cache" / "launchers"


def _marker_text(spec: str) -> str:
    return f"{spec} {PYTHON_TAG}\n"


def _usable(venv: Path, launcher: Launcher, spec: str) -> bool:
    """The venv was finished for this release and Python, and its interpreter still runs and
    finds the release installed (a removed base Python or a damaged site-packages fails)."""
    marker = venv / ".installed"
    if not marker.is_file() or marker.read_text(encoding="utf-8") != _marker_text(spec):
        return False
    try:
        done = subprocess.run(
            [str(_bin(venv)), "-c", VERSION_OF, launcher.package],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == launcher.version


def launcher_python(launcher: Launcher) -> Path:
    """The launcher's venv interpreter, (re)installing the pinned release when the cached venv
    is missing, stale or broken; checked once per test session."""
    spec = f"{launcher.package}=={launcher.version}"
    if spec not in _READY:
        _READY[spec] = _install(launcher, spec)
    return _READY[spec]


def _install(launcher: Launcher, spec: str) -> Path:
    venv = cache_dir() / f"{launcher.package}-{launcher.version}-{PYTHON_TAG}"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait, then reuse its venv
        if _usable(venv, launcher, spec):
            return _bin(venv)
        (venv / ".installed").unlink(missing_ok=True)  # half-built until the marker is back
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run(
            [
                str(_bin(venv)),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                spec,
            ],
            check=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        (venv / ".installed").write_text(_marker_text(spec), encoding="utf-8")
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
