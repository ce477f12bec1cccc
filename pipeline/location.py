"""Where an offer's GPU is: country (ISO 3166-1 alpha-2), continent and EEA/EU membership.

Data, not code: `data/countries.csv` (one row per country with its continent and whether it is in
the EU and the EEA = EU + Iceland, Liechtenstein, Norway) and each registered provider's places,
`scrapers/data/<provider>_regions.csv` (its region names and datacenter ids, each with its source;
read by `scrapers.registry.regions`). A bare ISO country code (`US`) is read as that country; a
region text ending in one after a comma (`Bavaria, DE`) too, but only for a provider without a
places file: one with a file names its regions there, and an unknown one (`Frankfurt, DE` from
AWS) stays unplaced, never guessed from its text. Anything else stays unknown: a continent
alone (CoreWeave's "Europe") never implies a country or the EEA.

A row may name the countries a place can be in, `FI|IS` (Verda: Finland or Iceland, not which):
the country stays unknown and each flag is the one all of them share, else unknown (Finland or
Iceland: in the EEA, EU unknown). A row with an empty region stands for every region of its
provider, offers without a region included; a region ending in `*` stands for every region
that starts with what precedes it (OVHcloud's `GRA*`: GRA7, GRA11, ...).
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Literal, TypeVar

from pipeline.errors import PipelineError
from scrapers import PROVIDERS, Provider
from scrapers.registry import regions

__all__ = [
    "JURISDICTIONS",
    "Location",
    "Locator",
    "get_locator",
]

Jurisdiction = Literal["eea", "eu"]
JURISDICTIONS: tuple[Jurisdiction, ...] = ("eea", "eu")
COUNTRY_CHOICE = "|"
"""Separates the possible countries of a place in a provider's regions file (`FI|IS`)."""
T = TypeVar("T")
_TRAILING_CODE = re.compile(r"(?:^|,)\s*([A-Za-z]{2})\s*$")
_BARE_CODE = re.compile(r"^\s*([A-Za-z]{2})\s*$")
"""A region that is itself a country code (RunPod's community cloud, `CZ`): that country, for
every provider; a code ending a text (`Bavaria, DE`) only for one without a places file."""


@dataclass(frozen=True, slots=True)
class Location:
    country: str | None = None
    continent: str | None = None
    eea: bool | None = None
    """None when the country is unknown: never counted in or out of the EEA."""
    eu: bool | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Country:
    iso2: str
    name: str
    continent: str
    eu: bool
    eea: bool


class Locator:
    def __init__(self, countries: list[Country], places: list[dict[str, str]]) -> None:
        self.countries = {c.iso2: c for c in countries}
        self.continents = tuple(sorted({c.continent for c in countries}))
        self.places = places
        self._by_region = {(p["provider"], p["region"].lower()): p for p in places}
        self._with_places = frozenset(p["provider"] for p in places)
        self._by_prefix = [
            (p["provider"], p["region"][:-1].lower(), p)
            for p in places
            if p["region"].endswith("*")
        ]

    def _country(self, iso2: str, source: str) -> Location:
        country = self.countries[iso2]
        return Location(country.iso2, country.continent, country.eea, country.eu, source)

    def _possible(self, codes: list[str], source: str) -> Location:
        """One of `codes`, not known which: only what holds for all of them."""
        countries = [self.countries[code] for code in codes]

        def shared(values: list[T]) -> T | None:
            return values[0] if len(set(values)) == 1 else None

        return Location(
            None,
            shared([c.continent for c in countries]),
            shared([c.eea for c in countries]),
            shared([c.eu for c in countries]),
            source,
        )

    def _place(self, place: dict[str, str]) -> Location:
        codes = [code for code in place["country"].split(COUNTRY_CHOICE) if code]
        if len(codes) == 1:
            return self._country(codes[0], place["source"])
        if codes:
            return self._possible(codes, place["source"])
        return Location(continent=place["continent"] or None, source=place["source"])

    def locate(self, provider: str, region: str | None) -> Location:
        place = self._by_region.get((provider, (region or "").strip().lower()))
        if place is not None:
            return self._place(place)
        for name, prefix, row in self._by_prefix:
            if name == provider and region and region.strip().lower().startswith(prefix):
                return self._place(row)
        whole_provider = self._by_region.get((provider, ""))
        if not region:
            return Location() if whole_provider is None else self._place(whole_provider)
        match = (_TRAILING_CODE if provider not in self._with_places else _BARE_CODE).search(
            region
        )
        if match and match.group(1).upper() in self.countries:
            return self._country(match.group(1).upper(), "ISO 3166-1 code in the region text")
        return Location() if whole_provider is None else self._place(whole_provider)

    def check_countries(self, codes: Iterable[str]) -> frozenset[str] | None:
        """Upper-cased ISO codes; an unknown one raises, naming close valid codes."""
        found = frozenset(code.strip().upper() for code in codes if code.strip())
        if not found:
            return None
        unknown = sorted(found - self.countries.keys())
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(self.countries), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise PipelineError(
                f"Unknown country code '{unknown[0]}': use ISO 3166-1 alpha-2 codes such as "
                f"DE, FR, NO, US{hint} (GET /regions lists the known locations)"
            )
        return found or None

    def check_continent(self, continent: str | None) -> str | None:
        """The continent as the data files spell it; an unknown one raises, listing them."""
        if continent is None:
            return None
        matched = [c for c in self.continents if c.lower() == continent.strip().lower()]
        if not matched:
            raise PipelineError(
                f"Unknown continent '{continent}'; valid: {', '.join(self.continents)}"
            )
        return matched[0]


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("pipeline.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


@cache
def _countries() -> tuple[Country, ...]:
    return tuple(
        Country(r["iso2"], r["name"], r["continent"], r["eu"] == "true", r["eea"] == "true")
        for r in _rows("countries.csv")
    )


def get_locator() -> Locator:
    """The locator of the registered providers' places (read again only when the registry
    changes). The registry is compared element by element, each provider by identity first:
    `_locator`'s key hashes every field of every provider, too much for each place filter of
    each request."""
    global _last
    providers = tuple(PROVIDERS.values())
    if _last is None or _last[0] != providers:
        _last = (providers, _locator(providers))
    return _last[1]


_last: tuple[tuple[Provider, ...], Locator] | None = None


@lru_cache(maxsize=4)
def _locator(providers: tuple[Provider, ...]) -> Locator:
    places = [{"provider": p.name, **place} for p in providers for place in regions(p)]
    return Locator(list(_countries()), places)
