"""The typed registry: what a registered module declares, read once, checked, with its defaults.

A provider module declares its contract as module constants (`CONTRACT` lists them). `source_of`
reads them once, at import, into a frozen `Provider` (a source of offers: it has `parse`) or
`RateSource` (a source of exchange rates, the ECB: it has `parse_rates`), so every consumer reads
typed fields with their defaults instead of `getattr`. A constant of the wrong type, a missing
one, or an upper-case name close to a contract name (`LISTED_0NLY`, `IN_PRICE_INDX`) raises
`ContractError` at import, saying what to fix: a typo never fails silently.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import httpx

from scrapers.base import Credentials
from scrapers.errors import MissingCredentialsError
from scrapers.models import ParseResult
from scrapers.urls import default_hosts

__all__ = [
    "CONTRACT",
    "REGION_COLUMNS",
    "ContractError",
    "Provider",
    "RateSource",
    "Source",
    "credentials_from_env",
    "read_registry",
    "regions",
    "replay_handler",
    "source_of",
]

Fetch = Callable[[httpx.Client, Credentials | None], bytes]
Parse = Callable[[bytes, datetime], ParseResult]
ReplayHandler = Callable[[httpx.Request], httpx.Response]
ReplayDirectory = Callable[[Path], ReplayHandler]


class DatedRate(Protocol):
    """One exchange rate a rate source parses: `rate` units of `currency` per one unit of its
    `CURRENCY` on `rate_date`."""

    @property
    def rate_date(self) -> Any: ...
    @property
    def currency(self) -> str: ...
    @property
    def rate(self) -> float: ...


ParseRates = Callable[[bytes], Sequence[DatedRate]]

REQUIRED = ("NAME", "URL", "ENV_KEY", "KEY_REQUIRED", "INTERVAL", "CURRENCY")
OPTIONAL = ("LISTED_ONLY", "IN_PRICE_INDEX", "HOSTS")
OFFERS_ONLY = ("LISTED_ONLY", "IN_PRICE_INDEX")
CONTRACT = REQUIRED + OPTIONAL
"""The module constants of a provider's contract. Required: `NAME`, `URL` (the endpoint a live
run fetches), `ENV_KEY` (the variable of its key, or None) and `KEY_REQUIRED`, `INTERVAL` (its
default collection interval), `CURRENCY` (what the source quotes prices in). Optional, with their
defaults: `LISTED_ONLY = False` (True: prices come from a published price list, listed, not
stock), `IN_PRICE_INDEX = True` (False: kept out of the price index, methodology v1), `HOSTS`
(the hosts its fetch may reach; default: its `URL`'s host without `www.`, subdomains included)."""
TYPO_CUTOFF = 0.75
"""How close (difflib's ratio) an undeclared upper-case name may come to a contract name before
it is refused as a typo of it (`HOST`, `LISTED_0NLY`; `REGIONS`, `MAX_PAGES` pass)."""
REGION_COLUMNS = ("region", "country", "continent", "source")
"""The header of a provider's `data/<NAME>_regions.csv`: its region text (empty: every region,
offers without one included; ending in `*`: every region starting with what precedes it), the
ISO 3166-1 alpha-2 country (`FI|IS`: one of these, not known which) or empty, the continent when
no country is known, and where the mapping comes from."""
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_CURRENCY = re.compile(r"[A-Z]{3}")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")


class ContractError(TypeError):
    """A registered module breaks the provider contract; the message names the module, the
    constant and what to write instead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """What every collected source declares (`CONTRACT`'s required part, and its hosts)."""

    name: str
    url: str
    env_key: str | None
    key_required: bool
    interval: timedelta
    """The default collection interval (the `intervals.<name>` setting overrides it)."""
    currency: str
    hosts: frozenset[str]
    """The hosts its fetch may reach, each with its subdomains (scrapers/urls.py refuses every
    other URL, redirect or next-page link)."""
    fetch: Fetch = field(repr=False)
    module: ModuleType = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider(Source):
    """A source of offers: `parse` turns its answer into offers."""

    parse: Parse = field(repr=False)
    listed_only: bool = False
    in_price_index: bool = True
    replay_directory: ReplayDirectory | None = field(default=None, repr=False)
    """How a directory of recorded answers is replayed (one per request), for the modules whose
    live run makes several requests; None: it replays one recorded answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RateSource(Source):
    """A source of exchange rates (the ECB): `parse_rates` gives dated rates, never offers; it
    is collected and scheduled like a provider, before them."""

    parse_rates: ParseRates = field(repr=False)


def source_of(module: ModuleType) -> Provider | RateSource:
    """`module`'s contract, read and checked: a `RateSource` when it defines `parse_rates`, a
    `Provider` when it defines `parse`. Raises `ContractError` saying what to fix."""
    where = module.__name__
    _refuse_typos(where, vars(module))
    parse, parse_rates = _function(module, "parse"), _function(module, "parse_rates")
    if (parse is None) == (parse_rates is None):
        raise ContractError(
            f"{where}: define either `parse(payload, observed_at)` (a provider of offers) or "
            "`parse_rates(payload)` (a rate source), exactly one of them"
        )
    fetch = _function(module, "fetch")
    if fetch is None:
        raise ContractError(f"{where}: define `fetch(client, creds) -> bytes` (its I/O)")
    url = _constant(module, "URL", str)
    hosts = _constant(module, "HOSTS", (tuple, list, frozenset, set), None)
    common: dict[str, Any] = {
        "name": _checked(where, "NAME", _constant(module, "NAME", str), _NAME, "a lower-case name"),
        "url": _checked(where, "URL", url, re.compile(r"https://\S+"), "an https:// URL"),
        "env_key": _constant(module, "ENV_KEY", (str, type(None))),
        "key_required": _constant(module, "KEY_REQUIRED", bool),
        "interval": _positive(where, _constant(module, "INTERVAL", timedelta)),
        "currency": _checked(
            where, "CURRENCY", _constant(module, "CURRENCY", str), _CURRENCY, 'e.g. "USD"'
        ),
        "hosts": default_hosts(url) if hosts is None else _hosts(where, hosts),
        "fetch": fetch,
        "module": module,
    }
    if parse_rates is not None:
        declared = [name for name in OFFERS_ONLY if hasattr(module, name)]
        if declared:
            raise ContractError(
                f"{where}: a rate source has no offers: remove {', '.join(declared)}"
            )
        return RateSource(parse_rates=parse_rates, **common)
    assert parse is not None
    return Provider(
        parse=parse,
        listed_only=_constant(module, "LISTED_ONLY", bool, False),
        in_price_index=_constant(module, "IN_PRICE_INDEX", bool, True),
        replay_directory=_function(module, "replay_directory"),
        **common,
    )


def read_registry(
    modules: Iterable[ModuleType],
) -> tuple[dict[str, Provider], dict[str, RateSource]]:
    """The providers and the rate sources of `modules` (`source_of` each), by name in their
    order; a name declared by two modules raises `ContractError` naming both."""
    providers: dict[str, Provider] = {}
    rates: dict[str, RateSource] = {}
    for module in modules:
        source = source_of(module)
        taken = providers.get(source.name) or rates.get(source.name)
        if taken is not None:
            raise ContractError(
                f"{module.__name__}: NAME {source.name!r} is already {taken.module.__name__}'s; "
                "give each provider its own NAME"
            )
        if isinstance(source, RateSource):
            rates[source.name] = source
        else:
            providers[source.name] = source
    return providers, rates


def _refuse_typos(where: str, names: Iterable[str]) -> None:
    for name in names:
        if name in CONTRACT or not _CONSTANT.fullmatch(name):
            continue
        close = difflib.get_close_matches(name, CONTRACT, n=1, cutoff=TYPO_CUTOFF)
        if close:
            raise ContractError(
                f"{where}: {name} is not part of a provider's contract; did you mean "
                f"{close[0]}? (the contract: {', '.join(CONTRACT)}; scrapers/registry.py)"
            )


_MISSING: Any = object()


def _constant(
    module: ModuleType, name: str, kind: type | tuple[type, ...], default: Any = _MISSING
) -> Any:
    value = vars(module).get(name, default)
    if value is _MISSING:
        raise ContractError(
            f"{module.__name__}: declare {name} (required by the provider contract)"
        )
    if value is not default and not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
        raise ContractError(
            f"{module.__name__}: {name} must be {wanted}, not {type(value).__name__} ({value!r})"
        )
    return value


def _function(module: ModuleType, name: str) -> Any:
    value = vars(module).get(name)
    if value is not None and not callable(value):
        raise ContractError(f"{module.__name__}: {name} must be a function")
    return value


def _checked(where: str, name: str, value: str, pattern: re.Pattern[str], wanted: str) -> str:
    if not pattern.fullmatch(value):
        raise ContractError(f"{where}: {name} must be {wanted}, not {value!r}")
    return value


def _positive(where: str, interval: timedelta) -> timedelta:
    if interval <= timedelta(0):
        raise ContractError(f"{where}: INTERVAL must be positive, not {interval}")
    return interval


def _hosts(where: str, hosts: Iterable[Any]) -> frozenset[str]:
    if not all(isinstance(host, str) and host for host in hosts):
        raise ContractError(f"{where}: HOSTS must hold host names (strings), not {hosts!r}")
    return frozenset(host.lower() for host in hosts)


def credentials_from_env(source: Source, env: Mapping[str, str]) -> Credentials | None:
    """The source's key from `env`; raises when a required key is missing."""
    if source.env_key is None:
        return None
    key = env.get(source.env_key, "").strip()
    if key:
        return Credentials(key)
    if source.key_required:
        raise MissingCredentialsError(
            f"{source.env_key} is not set: export it to collect {source.name}"
        )
    return None


def regions(source: Source) -> list[dict[str, str]]:
    """The places of the source's regions: the rows of `data/<name>_regions.csv` in its module's
    package (columns `REGION_COLUMNS`); none when it has no such file. A file with other columns
    raises `ValueError` naming it."""
    package = source.module.__package__ or source.module.__name__
    path = resources.files(package).joinpath("data").joinpath(f"{source.name}_regions.csv")
    if not path.is_file():
        return []
    reader = csv.DictReader(path.read_text(encoding="utf-8").splitlines())
    if tuple(reader.fieldnames or ()) != REGION_COLUMNS:
        raise ValueError(f"{path}: the header must be {','.join(REGION_COLUMNS)}")
    return list(reader)


def replay_handler(source: Source) -> ReplayDirectory:
    """How `source` replays a directory of recorded answers (`Provider.replay_directory`);
    raises `ValueError` for one that replays one file."""
    if not isinstance(source, Provider) or source.replay_directory is None:
        raise ValueError(f"{source.name} replays one file, not a directory")
    return source.replay_directory
