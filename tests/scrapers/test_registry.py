from __future__ import annotations

import pkgutil

import scrapers
from tests.conftest import FIXTURES

NOT_PROVIDERS = {"base", "batch", "errors", "machines", "models"}


def test_every_provider_module_is_registered_under_its_name():
    modules = {
        m.name for m in pkgutil.iter_modules(scrapers.__path__) if m.name not in NOT_PROVIDERS
    }
    registered = {module.__name__.rsplit(".", 1)[1] for module in scrapers.PROVIDERS.values()}
    assert registered == modules
    for name, module in scrapers.PROVIDERS.items():
        assert name == module.NAME
        assert module.URL.startswith("https://")


def test_every_provider_has_a_recorded_fixture():
    fixtures = {path.name for path in FIXTURES.iterdir()}
    for name in scrapers.PROVIDERS:
        assert any(f.startswith(name) for f in fixtures), name


def test_public_names_are_pinned():
    assert sorted(scrapers.__all__) == [
        "Credentials",
        "FormFactor",
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
