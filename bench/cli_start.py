"""How long `gpuprices --help` takes to start, against importing typer and rich alone.

CPU time (user + system) of each child process, the median of `--runs` runs, and their ratio;
the target (issue 42): `gpuprices --help` within 4x of `python -c "import typer, rich"`. Each
child runs this checkout's CLI (`python -m api`, cwd and PYTHONPATH the repository root).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import record_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 4.0
BASELINE = [sys.executable, "-c", "import typer, rich"]
CLI_HELP = [sys.executable, "-m", "api", "--help"]


def cpu_seconds(command: list[str]) -> float:
    """The CPU time (user + system) one child run of `command` takes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"},
        stdout=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--results", type=Path, help="append target results (JSON lines) here")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, {args.runs} runs each")
    baseline = statistics.median(cpu_seconds(BASELINE) for _ in range(args.runs))
    cli = statistics.median(cpu_seconds(CLI_HELP) for _ in range(args.runs))
    ratio = cli / baseline
    verdict = "MET" if ratio <= TARGET_RATIO else "NOT MET"
    print(f"import typer, rich: {baseline * 1000:.0f} ms CPU")
    print(f"gpuprices --help:   {cli * 1000:.0f} ms CPU")
    print(f"ratio {ratio:.1f}x (target <= {TARGET_RATIO:.0f}x): {verdict}")
    record_target(
        args.results,
        "`gpuprices --help` CPU / `import typer, rich`",
        f"{ratio:.1f}x ({cli * 1000:.0f} ms vs {baseline * 1000:.0f} ms)",
        f"<= {TARGET_RATIO:.0f}x",
        ratio <= TARGET_RATIO,
    )


if __name__ == "__main__":
    main()
