"""Optional modules that are not installed, failed at once when imported.

DuckDB's Python driver tries `import pandas` twice for every value bound to a query (to tell a
pandas object from a plain one). Where pandas is not installed, each try searches every entry of
`sys.path` again (Python does not remember a failed import): about 0.1 ms each, 5 ms of an
`/offers?as_of=` answer. `mark_absent` puts a finder first on `sys.meta_path` that fails those
imports without searching: the same `ModuleNotFoundError`, only sooner. A module that is
installed is never marked.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["mark_absent"]

OPTIONAL = ("pandas",)
"""Modules DuckDB or pyarrow import when they can, which gpuprices does not need."""


class _Absent(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


_FINDER = _Absent()


def mark_absent(names: Sequence[str] = OPTIONAL) -> None:
    """Fail at once, from now on, the imports of `names` that cannot be found now."""
    _FINDER.names.update(
        name
        for name in names
        if name not in _FINDER.names
        and name not in sys.modules
        and importlib.util.find_spec(name) is None
    )
    if _FINDER.names and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
