from __future__ import annotations

import pkgutil
import re
import types
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

import scrapers
from scrapers.base import (
    REGION_COLUMNS,
    Credentials,
    in_price_index,
    listed_only,
    regions,
    replay_handler,
)
from tests.conftest import FIXTURES, OBSERVED_AT

NOT_PROVIDERS = {"base", "batch", "errors", "machines", "models", "pagetext", "urls"}
DATA = Path(scrapers.__file__).parent / "data"
RECORDED = {
    "vastai": "vastai_bundles.json",
    "runpod": "runpod_gpu_types.json",
    "lambda": "lambda_instance_types.json",
    "coreweave": "coreweave_pricing.html",
    "scaleway": "scaleway_recorded",
    "ovhcloud": "ovhcloud_catalog_fr.json",
    "verda": "verda_pricing_recorded.html",
    "hetzner": "hetzner_live_data_prices.json",
    "digitalocean": "digitalocean_pricing.html",
    "nebius": "nebius_prices.html",
    "crusoe": "crusoe_pricing.html",
    "hotaisle": "hotaisle_pricing.html",
    "hyperstack": "hyperstack_gpu_pricing.html",
    "hyperbolic": "hyperbolic_rental_options.json",
    "lium": "lium_nodes.json",
    "cloudrift": "cloudrift_instance_types.json",
    "vultr": "vultr_plans.json",
    "daytona": "daytona_gpu_pricing.json",
    "voltagepark": "voltagepark_locations.json",
    "shadeform": "shadeform_instance_types.json",
    "primeintellect": "primeintellect_availability_gpus.json",
}


def test_every_provider_module_is_registered_under_its_name():
    modules = {
        m.name for m in pkgutil.iter_modules(scrapers.__path__) if m.name not in NOT_PROVIDERS
    }
    registered = {module.__name__.rsplit(".", 1)[1] for module in scrapers.PROVIDERS.values()}
    assert registered == modules
    for name, module in scrapers.PROVIDERS.items():
        assert name == module.NAME
        assert module.URL.startswith("https://")


def test_every_provider_declares_its_interval_and_currency():
    for name, module in scrapers.PROVIDERS.items():
        assert isinstance(module.INTERVAL, timedelta) and timedelta(0) < module.INTERVAL, name
        assert re.fullmatch("[A-Z]{3}", module.CURRENCY), name


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
    module = types.ModuleType("oddcloud.odd")
    module.__package__ = "oddcloud"
    module.NAME = "odd"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="odd_regions.csv: the header must be region,country"):
        regions(module)  # type: ignore[arg-type]


def test_listed_only_and_in_price_index_default_to_stock_and_indexed():
    bare = types.ModuleType("bare")
    assert listed_only(bare) is False and in_price_index(bare) is True
    bare.LISTED_ONLY = True  # type: ignore[attr-defined]
    bare.IN_PRICE_INDEX = False  # type: ignore[attr-defined]
    assert listed_only(bare) is True and in_price_index(bare) is False


@pytest.mark.parametrize(("name", "recorded"), sorted(RECORDED.items()))
def test_a_providers_recorded_offers_are_in_the_currency_its_module_declares(name, recorded):
    module = scrapers.PROVIDERS[name]
    path = FIXTURES / recorded
    if path.is_dir():
        handler = replay_handler(module)(path)
    else:
        body = path.read_bytes()
        handler = lambda request: httpx.Response(200, content=body)  # noqa: E731
    creds = Credentials("replay") if module.KEY_REQUIRED else None
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        result = module.parse(module.fetch(client, creds), OBSERVED_AT)
    assert result.offers
    assert {offer.currency or "USD" for offer in result.offers} == {module.CURRENCY}


def test_public_names_are_pinned():
    assert sorted(scrapers.__all__) == [
        "Credentials",
        "FormFactor",
        "MODULES",
        "MissingCredentialsError",
        "Offer",
        "OfferBatch",
        "PROVIDERS",
        "ParseResult",
        "Pricing",
        "ProviderError",
        "ProviderHTTPError",
        "ProviderModule",
        "ProviderPayloadError",
        "Reject",
        "RetryTransport",
        "USER_AGENT",
        "build_client",
        "credentials_from_env",
    ]
