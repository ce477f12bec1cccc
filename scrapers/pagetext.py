"""Reading published pricing pages by meaning: the words of a label, a USD price cell, a slug.

The pricing-page modules (DigitalOcean, Nebius, Crusoe, Hot Aisle, Hyperstack) find their
columns and tables by what the labels say, never by position or exact text: a label is read as
lower-case words with footnote marks and punctuation gone (`On-demand, GPU-hour` → `on demand gpu
hour`). A price cell is a USD amount with an optional hourly unit (`$2.59 per hour`,
`$3.90/GPU-hr`, `$2.99/GPU/hr`, `&nbsp;$1.40`); `Contact sales`, `N/A`, a dash or an empty cell
is no price; anything else (another currency, a monthly figure, `from $0.90`) is a `ValueError`
with the reason, for the record's reject.
"""

from __future__ import annotations

import re

from scrapers.errors import ProviderPayloadError

__all__ = ["complete_html", "label_words", "slug", "usd_per_hour", "visible_text"]

NO_PRICE_STARTS = ("contact", "per contract", "coming soon", "sold out")
NO_PRICE_EXACT = frozenset({"n a", "na", "tbd", "tba"})
"""A cell whose words start with one of `NO_PRICE_STARTS`, are one of `NO_PRICE_EXACT`, or that
has no letters or digits (`-`, `––`, empty) states no price."""

_FOOTNOTE = re.compile("[\u00b9\u00b2\u00b3\u2070-\u209f*\u2020\u2021^]")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_PRICE = re.compile(
    r"^\$\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s*"
    r"(?P<unit>|per\s+hour|/\s*h(?:ou)?r|/\s*gpu\s*[-/]?\s*h(?:ou)?r|per\s+gpu\s+per\s+hour)$",
    re.IGNORECASE,
)
_HTML_END = re.compile(rb"</html\s*>", re.IGNORECASE)


def visible_text(text: str) -> str:
    """`text` as a reader sees it: no-break spaces as spaces, runs of white space as one."""
    return " ".join(text.replace("\u00a0", " ").split())


def label_words(text: str) -> list[str]:
    """Lower-case words of a label with footnote marks and punctuation gone."""
    return _NON_WORD.sub(" ", _FOOTNOTE.sub("", text).lower()).split()


def slug(*parts: str) -> str:
    """A stable offer-id part: lower-case words joined by hyphens."""
    return "-".join("-".join(label_words(part)) for part in parts if label_words(part))


def usd_per_hour(cell: str) -> float | None:
    """USD per hour from a price cell; None when the cell states no price (see module doc)."""
    text = visible_text(cell)
    words = label_words(text)
    joined = " ".join(words)
    if not words or joined in NO_PRICE_EXACT or joined.startswith(NO_PRICE_STARTS):
        return None
    match = _PRICE.match(text)
    if match is None:
        if words[0] == "from":
            raise ValueError(
                f"price {text!r} is the lowest of a range of configurations, not one offer's price"
            )
        raise ValueError(f"price {text!r} is not a USD amount per hour like $2.59 per hour")
    return float(match.group("amount").replace(",", ""))


def complete_html(payload: bytes, provider: str) -> None:
    """Raise `ProviderPayloadError` for a body cut before `</html>`: html.parser closes open
    tags, so a truncated page would parse and silently drop rows."""
    if not _HTML_END.search(payload):
        raise ProviderPayloadError(f"{provider}: page is truncated (no closing </html> tag)")
