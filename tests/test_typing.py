"""A silenced type error says which error and why: every `# type: ignore` in the four packages
names its error code(s) and gives a reason after it on the same line
(`# type: ignore[misc]  # namedtuple built from the schema names`). `make test` runs mypy itself
(strict, `[tool.mypy]` in pyproject.toml), which also refuses an ignore that silences nothing."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("api", "pipeline", "scrapers", "warehouse")

_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
_EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z0-9-]+(?:,\s*[a-z0-9-]+)*\]\s+#\s*\S")


def unexplained_ignores(source: str) -> list[int]:
    """Lines of `source` with a `# type: ignore` comment lacking an error code or a reason (a
    string that merely contains the words is not a comment)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [
        token.start[0]
        for token in tokens
        if token.type == tokenize.COMMENT
        and _IGNORE.search(token.string)
        and not _EXPLAINED.search(token.string)
    ]


def test_a_bare_ignore_a_codeless_one_and_one_without_reason_are_caught() -> None:
    source = (
        "a = f()  # type: ignore\n"
        "b = f()  # type: ignore[misc]\n"
        "c = f()  # type: ignore  # because\n"
        "d = f()  # type: ignore[arg-type]  # the pattern admits csv and parquet only\n"
        "e = f()  # type: ignore[misc,valid-type]  # a model built from the scope's fields\n"
        "s = '# type: ignore'\n"
    )
    assert unexplained_ignores(source) == [1, 2, 3]


def test_every_type_ignore_names_its_error_code_and_says_why() -> None:
    unexplained = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in unexplained_ignores(path.read_text(encoding="utf-8"))
    ]
    assert unexplained == [], (
        "give these `# type: ignore[code]  # reason` (or fix the type error): "
        f"{', '.join(unexplained)}"
    )
