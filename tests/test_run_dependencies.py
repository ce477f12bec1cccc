"""Every third-party package the product imports is installed by the run install.

The run install is `pip install '.[lake]'` (`make run`, `make demo`, the image): a package that
only the `dev` extra brings in passes the suite (which runs with `dev`) and fails a fresh clone
at start-up, as PyYAML once did. This reads every import of `api`, `pipeline`, `scrapers` and
`warehouse` (module level and inside functions; `TYPE_CHECKING` blocks excepted: never run) and
checks that each names a package installed by the run requirements or what they require.
`.ci/run_install_check.py` checks the same end to end, in a venv with only the run install.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
OURS = ("api", "pipeline", "scrapers", "warehouse")
RUN_EXTRAS = ("lake",)  # the Makefile's run stamp and the Dockerfile: `pip install '.[lake]'`


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """Top-level names imported in `tree` (`import a.b` -> `a`), with their lines."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if _type_checking_only(node):
            pending.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name.split(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno
        elif (  # importlib.import_module("psycopg"): the optional extras' packages
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value.split(".")[0], node.lineno
        pending.extend(ast.iter_child_nodes(node))


def _third_party_imports() -> dict[str, list[str]]:
    """Import name -> where it is imported (`pipeline/x.py:12`)."""
    found: dict[str, list[str]] = {}
    for package in OURS:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for name, line in _imports(tree):
                if name in OURS or name in sys.stdlib_module_names or name == "__future__":
                    continue
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _run_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = list(project["dependencies"])
    for extra in RUN_EXTRAS:
        texts.extend(project["optional-dependencies"][extra])
    return [Requirement(text) for text in texts]


def _run_closure() -> set[str]:
    """Distributions the run install brings in: its requirements and theirs, recursively, with
    the extras asked for and the markers of this interpreter."""
    closure: set[str] = set()
    pending = [(r, frozenset()) for r in _run_requirements()]
    while pending:
        requirement, _ = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = _canonical(requirement.name)
        extras = frozenset(requirement.extras)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in closure:
            continue
        closure.add(key)
        closure.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: the run install check finds it
        for text in requires:
            needed = Requirement(text)
            marker = needed.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in extras or {""}):
                needed.marker = None
                pending.append((needed, frozenset()))
    return {key for key in closure if "[" not in key}


def test_every_third_party_import_is_installed_by_the_run_install():
    providers = metadata.packages_distributions()
    closure = _run_closure()
    missing = {
        name: where
        for name, where in _third_party_imports().items()
        if not {_canonical(d) for d in providers.get(name, [])} & closure
    }
    assert missing == {}, (
        "imported at run time but installed only by a dev/docs/bench extra (or not at all): "
        "add each to pyproject.toml's `dependencies` with a pinned range: "
        + "; ".join(f"{name} ({', '.join(where[:3])})" for name, where in sorted(missing.items()))
    )


def test_the_check_sees_what_only_dev_installs():
    """The check can fail: `hypothesis` and `respx` (dev only) are outside the run closure."""
    closure = _run_closure()
    assert "hypothesis" not in closure and "respx" not in closure
    assert {"duckdb", "fastapi", "starlette", "pyyaml", "psycopg"} <= closure
