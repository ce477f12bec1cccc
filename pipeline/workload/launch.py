"""An offer in a launcher's words: SkyPilot's or dstack's names for its cloud, place and GPU.

The names are data, `pipeline/data/launchers.toml`, which says which release of each launcher
they were read from; this module only looks them up and says clearly when a launcher cannot run
an offer. The task files themselves are written by `pipeline.workload.task_files`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal, get_args

from pipeline.errors import LauncherError

__all__ = [
    "LAUNCHERS",
    "Cloud",
    "Launcher",
    "LauncherName",
    "Target",
    "get_launcher",
    "target",
]

LauncherName = Literal["skypilot", "dstack"]
LAUNCHERS: tuple[str, ...] = get_args(LauncherName)
_TITLES = {"skypilot": "SkyPilot", "dstack": "dstack"}

RegionFormat = Literal["as_is", "country", "geolocation_continent", "country_city", "none"]


@dataclass(frozen=True, slots=True)
class Cloud:
    """One of our providers as a launcher names it."""

    name: str
    region: RegionFormat
    zone: RegionFormat | None
    gpus: Mapping[str, str]
    """GPU names that differ on this cloud from the launcher's default ("" = none there)."""


@dataclass(frozen=True, slots=True)
class Launcher:
    key: str
    title: str
    package: str
    version: str
    clouds: Mapping[str, Cloud]
    """By our provider name."""
    gpus: Mapping[str, str]
    """By our GPU id, or "<id> <form factor>" where the launcher names the forms apart."""
    continent_codes: Mapping[str, str]

    @property
    def release(self) -> str:
        return f"{self.title} {self.version}"

    def supported(self) -> str:
        return ", ".join(sorted(self.clouds))


@dataclass(frozen=True, slots=True)
class Target:
    """Where and on what a quote's offer runs, in one launcher's names."""

    launcher: Launcher
    provider: str
    cloud: str
    region: str | None
    """None: the offer did not say, or the launcher's region cannot be told from ours."""
    zone: str | None
    gpu: str
    gpu_count: int
    spot: bool
    spelling: str | None = None
    """How `region` spells the offer's place, in words (for the task file's comment)."""


def _as_is(offer: Mapping[str, Any], _codes: Mapping[str, str]) -> str | None:
    return offer.get("region") or None


def _country(offer: Mapping[str, Any], _codes: Mapping[str, str]) -> str | None:
    return offer.get("country") or None


def _geolocation_continent(offer: Mapping[str, Any], codes: Mapping[str, str]) -> str | None:
    """Vast.ai's `geolocation` with the continent code SkyPilot's catalog appends:
    "Texas, US" -> "Texas, US, NA"; a bare country "US" -> ", US, NA"."""
    region, code = offer.get("region"), codes.get(offer.get("continent") or "")
    if not region or code is None:
        return None
    return f"{region}, {code}" if ", " in region else f", {region}, {code}"


def _country_city(offer: Mapping[str, Any], _codes: Mapping[str, str]) -> str | None:
    """gpuhunt's Vast.ai location: "Texas, US" -> "us-texas"; "US" -> "us"."""
    region = offer.get("region")
    if not region:
        return None
    place, _, country = region.rpartition(", ")
    words = f"{country}-{place}" if place else country
    return words.lower().replace(" ", "")


_SPELLINGS: Mapping[str, str] = {
    "as_is": "{provider}'s own region name, which {launcher} uses unchanged",
    "country": "the country of {provider}'s data centre \"{ours}\": {launcher}'s regions on "
    "{provider} are countries, its zones the data centres",
    "geolocation_continent": "{launcher}'s spelling of {provider}'s place \"{ours}\": its catalog "
    'writes "<state>, <country>, <continent code>", the state empty when the host names only '
    "its country",
    "country_city": "{launcher}'s spelling (from gpuhunt) of {provider}'s place \"{ours}\": "
    '"<country>-<state or city>", lower case, no spaces',
}
"""Each region format in words, for the comment beside the region it writes."""

_PLACES: Mapping[str, Callable[[Mapping[str, Any], Mapping[str, str]], str | None]] = {
    "as_is": _as_is,
    "country": _country,
    "geolocation_continent": _geolocation_continent,
    "country_city": _country_city,
    "none": lambda _offer, _codes: None,
}


def _cloud(table: Mapping[str, Any]) -> Cloud:
    for key in ("region", "zone"):
        if key in table and table[key] not in _PLACES:
            raise ValueError(f"launchers.toml: unknown {key} format {table[key]!r}")
    gpus = table.get("accelerators", table.get("gpus", {}))
    return Cloud(table["name"], table["region"], table.get("zone"), dict(gpus))


@cache
def _launchers() -> dict[str, Launcher]:
    text = resources.files("pipeline.data").joinpath("launchers.toml").read_text("utf-8")
    data = tomllib.loads(text)
    return {
        key: Launcher(
            key=key,
            title=_TITLES[key],
            package=data[key]["package"],
            version=data[key]["version"],
            clouds={ours: _cloud(t) for ours, t in data[key]["clouds"].items()},
            gpus=dict(data[key].get("accelerators", data[key].get("gpus", {}))),
            continent_codes=dict(data[key].get("continent_codes", {})),
        )
        for key in LAUNCHERS
    }


def get_launcher(name: str) -> Launcher:
    """The launcher by its key (`skypilot`, `dstack`), with the names read from its release."""
    try:
        return _launchers()[name]
    except KeyError:
        choices = ", ".join(LAUNCHERS)
        raise LauncherError("launcher", f"must be one of {choices}, got {name!r}") from None


def _gpu_name(launcher: Launcher, cloud: Cloud, gpu: str, form_factor: str | None) -> str | None:
    keys = ([f"{gpu} {form_factor}"] if form_factor else []) + [gpu]
    for names in (cloud.gpus, launcher.gpus):
        for key in keys:
            if key in names:
                return names[key] or None
    return None


def target(launcher_name: str, offer: Mapping[str, Any], *, rank: int = 1) -> Target:
    """The offer (a row of `current_offers`, quote number `rank`) in the launcher's names; a
    `LauncherError` naming what the launcher supports when it cannot run there."""
    launcher = get_launcher(launcher_name)
    provider = str(offer["provider"])
    cloud = launcher.clouds.get(provider)
    if cloud is None:
        raise LauncherError(
            "pick",
            f"quote {rank} is on {provider}, where {launcher.release} cannot launch; it launches "
            f"on {launcher.supported()}: choose another quote with --pick",
        )
    gpu, form = str(offer["gpu"]), offer.get("form_factor")
    name = _gpu_name(launcher, cloud, gpu, str(form) if form else None)
    if name is None:
        shown = f"{gpu} {form}" if form else gpu
        raise LauncherError(
            "pick",
            f"quote {rank} is on {shown}, which {launcher.release} does not name on {provider} "
            "(pipeline/data/launchers.toml): choose another quote with --pick",
        )
    codes = launcher.continent_codes
    region = _PLACES[cloud.region](offer, codes)
    spelling = _SPELLINGS.get(cloud.region) if region is not None else None
    return Target(
        launcher=launcher,
        provider=provider,
        cloud=cloud.name,
        region=region,
        zone=_PLACES[cloud.zone](offer, codes) if cloud.zone else None,
        gpu=name,
        gpu_count=int(offer["gpu_count"]),
        spot=offer.get("pricing") == "spot",
        spelling=spelling.format(
            provider=provider, launcher=launcher.title, ours=offer.get("region")
        )
        if spelling
        else None,
    )
