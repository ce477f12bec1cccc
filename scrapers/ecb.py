"""The ECB's euro foreign exchange reference rates: a rate source (it defines `parse_rates`, so
the registry reads it as a `RateSource`), not a provider of offers.

Quirks (see docs/pages/notes/eu-providers.md, "EUR → USD"):
- `gesmes:Envelope` → `Cube` → `Cube[@time=YYYY-MM-DD]` → `Cube[@currency][@rate]`, the cubes in
  the namespace `http://www.ecb.int/vocabulary/2002-08-01/eurofxref`; `rate` is units of the
  currency per 1 EUR, so USD = EUR × rate(USD).
- The daily file uses single-quoted attributes and tabs, the history files (`eurofxref-hist.xml`,
  `-hist-90d.xml`) double quotes: read with an XML parser, never by pattern. The same parser reads
  all three, so a history file can be replayed to fill past dates.
- Published around 16:00 CET on TARGET working days only: no rate on weekends and holidays, so
  the pipeline converts with the latest rate dated on or before the observation.
- An answer without any dated rate, or a rate that is not a positive number, is a bad payload.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import date, timedelta

import httpx

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import decimal
from scrapers.errors import ProviderPayloadError

__all__ = ["BASE", "NAME", "Rate", "fetch", "parse_rates"]

NAME = "ecb"
ENV_KEY: str | None = None
KEY_REQUIRED = False
URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
INTERVAL = timedelta(days=1)  # the ECB publishes once per working day, around 16:00 CET
CURRENCY = "EUR"  # rates are units of each currency per EUR
BASE = "EUR"
_NS = "{http://www.ecb.int/vocabulary/2002-08-01/eurofxref}"


@dataclass(frozen=True, slots=True)
class Rate:
    """`rate` units of `currency` per one EUR on `rate_date`."""

    rate_date: date
    currency: str
    rate: float


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(client, "GET", URL, provider=NAME)


def parse_rates(payload: bytes) -> list[Rate]:
    """Every (date, currency, rate) of an ECB reference-rate file (daily or history)."""
    if b"<!DOCTYPE" in payload[:1024] or b"<!ENTITY" in payload:
        raise ProviderPayloadError(f"{NAME}: body declares a DTD; refusing it")
    try:
        root = ET.fromstring(payload)
    except ET.ParseError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not XML ({exc})") from exc
    rates: list[Rate] = []
    for day in root.iter(f"{_NS}Cube"):
        when = day.get("time")
        if when is None:
            continue
        try:
            rate_date = date.fromisoformat(when)
        except ValueError as exc:
            raise ProviderPayloadError(f"{NAME}: Cube time {when!r} is not a date") from exc
        for cube in day.findall(f"{_NS}Cube"):
            rates.append(_rate(rate_date, cube))
    if not rates:
        raise ProviderPayloadError(
            f"{NAME}: no dated rates (Cube[@time]/Cube[@currency][@rate]) in the body"
        )
    return rates


def _rate(rate_date: date, cube: ET.Element) -> Rate:
    currency, text = cube.get("currency"), cube.get("rate")
    if not currency or text is None:
        raise ProviderPayloadError(f"{NAME}: a rate of {rate_date} lacks its currency or rate")
    try:
        value = decimal("rate", text)
    except ValueError as exc:
        raise ProviderPayloadError(f"{NAME}: rate {text!r} of {currency} is not a number") from exc
    if not math.isfinite(value) or value <= 0:
        raise ProviderPayloadError(f"{NAME}: rate {text!r} of {currency} is not positive")
    return Rate(rate_date, currency.upper(), value)
