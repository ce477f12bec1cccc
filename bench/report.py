"""Targets the benchmarks measured, gathered into one table for `make bench`.

Each benchmark prints its own figures and, given `--results FILE`, appends one JSON line per
target it measures; `python bench/report.py FILE` prints them all as a table with MET / NOT MET.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

__all__ = ["record_target"]


def record_target(
    results: Path | None, target: str, measured: str, goal: str, met: bool
) -> None:
    """Print the target's line and, with a results file, append it there."""
    print(f"TARGET {target}: {measured} (goal {goal}) -> {'MET' if met else 'NOT MET'}")
    if results is not None:
        line = {"target": target, "measured": measured, "goal": goal, "met": met}
        with results.open("ab") as out:
            out.write(orjson.dumps(line) + b"\n")


def main() -> None:
    lines = [orjson.loads(line) for line in Path(sys.argv[1]).read_bytes().splitlines() if line]
    width = max((len(line["target"]) for line in lines), default=10)
    goal_width = max((len(line["goal"]) for line in lines), default=4)
    print(f"\n{'target':<{width}}  {'goal':<{goal_width}}  measured -> verdict")
    for line in lines:
        verdict = "MET" if line["met"] else "NOT MET"
        print(
            f"{line['target']:<{width}}  {line['goal']:<{goal_width}}  "
            f"{line['measured']} -> {verdict}"
        )
    missing = sum(not line["met"] for line in lines)
    print(f"{len(lines) - missing} of {len(lines)} targets met")


if __name__ == "__main__":
    main()
