"""Text for the generated reference pages' Markdown, shared by `reference_api.py`,
`reference_cli.py` and `generate.py`: table cells, numbers and lists of values."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["cell", "number", "values"]

_CODE = re.compile(r"(`[^`]*`)")


def cell(text: str) -> str:
    """One table cell: on one line, `|` escaped, and `<name>` shown as text, not taken for HTML
    (inside backticks it is code already and stays as written)."""
    parts = _CODE.split(" ".join(text.split()))
    return "".join(
        part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;")
        for part in parts
    ).replace("|", "\\|")


def number(value: float) -> str:
    """`10,000`, `0.5`: a bound as a person reads it."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def values(options: Iterable[Any]) -> str:
    """An enum's values: "one of `on_demand`, `spot`"."""
    return "one of " + ", ".join(f"`{v}`" for v in options)
