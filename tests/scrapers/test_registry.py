from __future__ import annotations

import pkgutil
import re
import types
from datetime import timedelta
from pathlib import Path
from textwrap import dedent

import httpx
import pytest

import scrapers
from pipeline.collection.demo import demo_bodies
from scrapers.base import REPLAY_HEADER, Credentials
from scrapers.registry import (
    REGION_COLUMNS,
    ContractError,
    Provider,
    RateSource,
    read_registry,
    regions,
    replay_handler,
    source_of,
)
from tests.conftest import FIXTURES, OBSERVED_AT

NOT_PROVIDERS = {"base", "batch", "errors", "machines", "models", "pagetext", "registry", "urls"}
ROOT = Path(__file__).resolve().parents[2]
DATA = Path(scrapers.__file__).parent / "data"
DEMO = ROOT / "pipeline" / "data" / "demo"
SCRAPER_TESTS = Path(__file__).parent
PROVIDERS_PAGE = ROOT / "docs" / "pages" / "providers.md"


def _module_name(source: scrapers.Source) -> str:
    return source.module.__name__.rsplit(".", 1)[1]


def test_every_provider_module_is_registered_under_its_name():
    modules = {
        m.name for m in pkgutil.iter_modules(scrapers.__path__) if m.name not in NOT_PROVIDERS
    }
    registered = {_module_name(source) for source in scrapers.sources().values()}
    assert registered == modules, "register each provider module in scrapers/__init__.py MODULES"
    for name, source in scrapers.sources().items():
        assert name == source.name == source.module.NAME
        assert source.url.startswith("https://")


def test_the_ecb_is_a_rate_source_and_no_provider_of_offers():
    assert set(scrapers.RATE_SOURCES) == {"ecb"} and "ecb" not in scrapers.PROVIDERS
    assert all(isinstance(p, Provider) for p in scrapers.PROVIDERS.values())
    assert isinstance(scrapers.RATE_SOURCES["ecb"], RateSource)
    assert list(scrapers.sources())[0] == "ecb"  # collected first: EUR prices convert with it


def test_every_provider_declares_its_interval_and_currency():
    for name, source in scrapers.sources().items():
        assert isinstance(source.interval, timedelta) and timedelta(0) < source.interval, name
        assert re.fullmatch("[A-Z]{3}", source.currency), name


def test_every_regions_file_belongs_to_a_registered_provider_and_has_the_region_columns():
    files = sorted(DATA.glob("*_regions.csv"))
    assert files
    for path in files:
        name = path.name.removesuffix("_regions.csv")
        assert name in scrapers.PROVIDERS, f"{path.name} names no registered provider"
        assert path.read_text(encoding="utf-8").splitlines()[0] == ",".join(REGION_COLUMNS)
        assert regions(scrapers.PROVIDERS[name]), f"{path.name} has no rows"


def test_a_provider_without_a_regions_file_has_no_places():
    assert regions(scrapers.PROVIDERS["vastai"]) == []  # its regions end in a country code


def test_a_regions_file_with_other_columns_is_refused_naming_it(tmp_path, monkeypatch):
    (tmp_path / "oddcloud" / "data").mkdir(parents=True)
    (tmp_path / "oddcloud" / "__init__.py").write_text("")
    (tmp_path / "oddcloud" / "data" / "odd_regions.csv").write_text("provider,region\nodd,x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    odd = contract_module(NAME='"odd"')
    odd.__package__ = "oddcloud"
    with pytest.raises(ValueError, match="odd_regions.csv: the header must be region,country"):
        regions(source_of(odd))


CONSTANTS = {
    "NAME": '"acme"',
    "URL": '"https://api.acme.example/v1/prices"',
    "ENV_KEY": "None",
    "KEY_REQUIRED": "False",
    "INTERVAL": "timedelta(hours=1)",
    "CURRENCY": '"USD"',
}


def contract_module(functions: str = "fetch parse", **constants: str | None) -> types.ModuleType:
    """A module `scrapers.acme` declaring `CONSTANTS` with `constants` changed (None: left out)
    and the functions named."""
    declared = {**CONSTANTS, **constants}
    lines = [f"{name} = {value}" for name, value in declared.items() if value is not None]
    lines += [f"def {name}(*args): ..." for name in functions.split()]
    module = types.ModuleType("scrapers.acme")
    exec(dedent("from datetime import timedelta\n" + "\n".join(lines)), vars(module))  # noqa: S102
    return module


def test_optional_constants_take_their_defaults_stock_indexed_and_the_urls_host():
    acme = source_of(contract_module())
    assert isinstance(acme, Provider)
    assert (acme.listed_only, acme.in_price_index) == (False, True)
    assert acme.hosts == frozenset({"api.acme.example"})
    listed = source_of(
        contract_module(LISTED_ONLY="True", IN_PRICE_INDEX="False", HOSTS='("a.b",)')
    )
    assert isinstance(listed, Provider)
    assert (listed.listed_only, listed.in_price_index, listed.hosts) == (True, False, {"a.b"})


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("LISTED_0NLY", "LISTED_ONLY"), ("IN_PRICE_INDX", "IN_PRICE_INDEX"), ("HOST", "HOSTS"),
     ("KEY_REQUIERD", "KEY_REQUIRED")],
)  # fmt: skip
def test_a_misspelt_contract_constant_is_refused_naming_the_one_meant(typo, meant):
    with pytest.raises(ContractError, match=f"scrapers.acme: {typo} .* did you mean {meant}\\?"):
        source_of(contract_module(**{typo: "True"}))


def test_a_modules_own_constants_far_from_the_contract_are_left_alone():
    assert source_of(contract_module(MAX_PAGES="3", REGIONS="()", TIMEOUT="30")).name == "acme"


@pytest.mark.parametrize(
    ("constants", "message"),
    [
        ({"CURRENCY": None}, "declare CURRENCY"),
        ({"LISTED_ONLY": '"yes"'}, "LISTED_ONLY must be bool, not str"),
        ({"INTERVAL": "600"}, "INTERVAL must be timedelta, not int"),
        ({"INTERVAL": "timedelta(0)"}, "INTERVAL must be positive"),
        ({"ENV_KEY": "1"}, "ENV_KEY must be str or None"),
        ({"CURRENCY": '"usd"'}, 'CURRENCY must be e.g. "USD"'),
        ({"URL": '"http://acme.example"'}, "URL must be an https:// URL"),
        ({"HOSTS": '"acme.example"'}, "HOSTS must be tuple or list"),
    ],
)
def test_a_constant_missing_or_of_the_wrong_type_is_refused_saying_what_to_write(
    constants, message
):
    with pytest.raises(ContractError, match=re.escape(message)):
        source_of(contract_module(**constants))


def test_a_module_is_a_provider_by_parse_or_a_rate_source_by_parse_rates_never_both():
    rates = source_of(contract_module("fetch parse_rates", CURRENCY='"EUR"'))
    assert isinstance(rates, RateSource)
    for functions in ("fetch", "fetch parse parse_rates"):
        with pytest.raises(ContractError, match="define either `parse"):
            source_of(contract_module(functions))
    with pytest.raises(ContractError, match="define `fetch"):
        source_of(contract_module("parse"))
    with pytest.raises(ContractError, match="a rate source has no offers: remove LISTED_ONLY"):
        source_of(contract_module("fetch parse_rates", LISTED_ONLY="True"))


@pytest.mark.parametrize("name", list(scrapers.PROVIDERS))
def test_a_providers_recorded_offers_are_in_the_currency_its_module_declares(name):
    provider = scrapers.PROVIDERS[name]
    path = demo_bodies(DEMO)[name]  # its recorded answer (the demo's, which every source has)
    if path.is_dir():
        handler = replay_handler(provider)(path)
    else:
        body = path.read_bytes()
        handler = lambda request: httpx.Response(200, content=body)  # noqa: E731
    creds = Credentials("replay") if provider.key_required else None
    one_answer = {} if path.is_dir() else {REPLAY_HEADER: "1"}  # a next-page link ends it
    with httpx.Client(transport=httpx.MockTransport(handler), headers=one_answer) as client:
        result = provider.parse(provider.fetch(client, creds), OBSERVED_AT)
    assert result.offers
    assert {offer.currency or "USD" for offer in result.offers} == {provider.currency}


def test_public_names_are_pinned():
    assert sorted(scrapers.__all__) == [
        "ContractError",
        "Credentials",
        "FormFactor",
        "MODULES",
        "MissingCredentialsError",
        "Offer",
        "OfferBatch",
        "PROVIDERS",
        "ParseResult",
        "Pricing",
        "Provider",
        "ProviderError",
        "ProviderHTTPError",
        "ProviderPayloadError",
        "RATE_SOURCES",
        "RateSource",
        "Reject",
        "RetryTransport",
        "Source",
        "USER_AGENT",
        "build_client",
        "credentials_from_env",
        "sources",
    ]


# What every registered source brings with it (docs/pages/development.md, "Adding a provider"):
# the rule each test states in its failure message.
SOURCES = pytest.mark.parametrize("name", list(scrapers.sources()))


@SOURCES
def test_every_source_has_a_recorded_answer_for_the_tests_and_one_for_the_demo(name):
    assert sorted(FIXTURES.glob(f"{name}_*")), (
        f"add {name}'s recorded answer as tests/fixtures/{name}_<what>.<ext> (a file, or a "
        "directory for a provider of many answers) and say where it comes from in "
        "tests/fixtures/README.md"
    )
    assert name in demo_bodies(DEMO), (
        f"add {name}'s recorded answer for the demo as pipeline/data/demo/{name}.<ext> (or a "
        f"directory pipeline/data/demo/{name}/)"
    )


def _parser_tests(module: str, parse: str) -> list[Path]:
    """The test modules of tests/scrapers/ that test `module`'s parser: its own
    `test_<module>.py`, and any other that calls `<module>.<parse>(`."""
    own = SCRAPER_TESTS / f"test_{module}.py"
    calls = f"{module}.{parse}("
    return [own] * own.is_file() + [
        path
        for path in sorted(SCRAPER_TESTS.glob("test_*.py"))
        if path != own and calls in path.read_text(encoding="utf-8")
    ]


@SOURCES
def test_every_source_has_a_parser_test(name):
    source = scrapers.sources()[name]
    module = _module_name(source)
    parse = "parse_rates" if isinstance(source, RateSource) else "parse"
    assert _parser_tests(module, parse), (
        f"add tests/scrapers/test_{module}.py, replaying {name}'s recorded answer through "
        f"{module}.{parse} (a parser test is that file, or a tests/scrapers/test_*.py that calls "
        f"`{module}.{parse}(`)"
    )


def _providers_page_rows() -> list[str]:
    """The first cells of the table under "How each provider is read" in providers.md."""
    text = PROVIDERS_PAGE.read_text(encoding="utf-8")
    section = text.split("## How each provider is read", 1)[1].split("\n## ", 1)[0]
    return [line.split("|")[1] for line in section.splitlines() if line.startswith("| ")]


@SOURCES
def test_every_source_has_a_row_on_the_providers_page(name):
    assert any(f"`{name}`" in cell for cell in _providers_page_rows()), (
        f"add a row for {name} to the table under 'How each provider is read' in "
        f"docs/pages/providers.md, its first cell naming it as `{name}` (e.g. "
        f"| Acme GPU (`{name}`) | endpoint | price quoted | what we publish |)"
    )


def test_the_rules_see_a_source_without_its_files():
    assert _parser_tests("acmegpu", "parse") == []
    assert "acmegpu" not in demo_bodies(DEMO) and not sorted(FIXTURES.glob("acmegpu_*"))
    assert not any("`acmegpu`" in cell for cell in _providers_page_rows())
    assert any("`gcp`" in cell for cell in _providers_page_rows())


def test_the_registry_keeps_providers_and_rate_sources_apart_and_each_name_once():
    offers = contract_module()
    rates = contract_module("fetch parse_rates", NAME='"acmerates"', CURRENCY='"EUR"')
    providers, rate_sources = read_registry([rates, offers])
    assert (list(providers), list(rate_sources)) == (["acme"], ["acmerates"])
    again = contract_module()
    again.__name__ = "scrapers.acme2"
    with pytest.raises(
        ContractError, match="scrapers.acme2: NAME 'acme' is already scrapers.acme's"
    ):
        read_registry([offers, again])
