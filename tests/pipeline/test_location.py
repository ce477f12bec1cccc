from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.errors import PipelineError
from pipeline.location import get_locator
from pipeline.market.scope import OfferScope, resolve

LOCATOR = get_locator()


@pytest.mark.parametrize(
    ("provider", "region", "country", "eea", "eu"),
    [
        ("vastai", "Bavaria, DE", "DE", True, True),
        ("vastai", "Uusimaa, FI", "FI", True, True),
        ("vastai", "Oslo, NO", "NO", True, False),
        ("vastai", "Mazovia, PL", "PL", True, True),
        ("vastai", "US", "US", False, False),
        ("vastai", "Ontario, CA", "CA", False, False),
        ("runpod", "EU-RO-1", "RO", True, True),
        ("runpod", "EUR-IS-1", "IS", True, False),
        ("runpod", "CA-MTL-1", "CA", False, False),
        ("runpod", "CZ", "CZ", True, True),
        ("lambda", "europe-central-1", "DE", True, True),
        ("lambda", "us-east-1", "US", False, False),
    ],
)
def test_provider_locations_map_to_countries_and_jurisdictions(provider, region, country, eea, eu):
    place = LOCATOR.locate(provider, region)
    assert (place.country, place.eea, place.eu) == (country, eea, eu)
    assert place.source


def test_a_continent_alone_never_implies_a_country_or_the_eea():
    place = LOCATOR.locate("coreweave", "Europe")
    assert (place.country, place.continent, place.eea, place.eu) == (None, "Europe", None, None)


@pytest.mark.parametrize("region", [None, "", "Somewhere nice", "Texas", "EU-XX-9"])
def test_unknown_locations_stay_unknown(region):
    place = LOCATOR.locate("vastai", region)
    assert place.country is None and place.eea is None


def test_every_mapped_country_is_in_the_country_table():
    for place in LOCATOR.places:
        for country in place["country"].split("|"):
            assert not country or country in LOCATOR.countries, place
        assert place["source"]


def test_the_eea_is_the_eu_plus_iceland_liechtenstein_and_norway():
    eu = {c for c, row in LOCATOR.countries.items() if row.eu}
    eea = {c for c, row in LOCATOR.countries.items() if row.eea}
    assert len(eu) == 27 and eea - eu == {"IS", "LI", "NO"}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"countries": ["XX"]}, PipelineError, "ISO 3166-1"),
        ({"jurisdiction": "mars"}, ValidationError, "'eea' or 'eu'"),
        ({"continent": "Atlantis"}, PipelineError, "valid: Africa"),
    ],
)
def test_bad_location_filters_name_the_valid_choices(kwargs, error, message):
    with pytest.raises(error, match=message):
        resolve(OfferScope(**kwargs))


def test_filters_accept_lists_commas_and_any_case():
    place = resolve(OfferScope(country=["de,fr", "no"], continent="europe", jurisdiction="EEA"))
    assert place.countries == {"DE", "FR", "NO"}
    assert (place.continent, place.jurisdiction) == ("Europe", "eea")


def test_a_place_in_one_of_several_countries_keeps_only_the_flags_they_share():
    verda = LOCATOR.locate("verda", None)  # Finland or Iceland: EEA, EU unknown
    assert (verda.country, verda.continent, verda.eea, verda.eu) == (None, "Europe", True, None)
    assert LOCATOR.locate("verda", "FIN-01") == verda  # a region it does not list: the same


def test_a_region_prefix_maps_every_region_that_starts_with_it():
    assert LOCATOR.locate("ovhcloud", "GRA11").country == "FR"
    assert LOCATOR.locate("ovhcloud", "BHS5").country == "CA"
    assert LOCATOR.locate("ovhcloud", "XYZ1").country is None


def test_a_region_unknown_to_a_providers_places_file_is_unplaced_not_guessed_from_its_text():
    locator = get_locator()
    assert locator.locate("aws", "Frankfurt, DE").country is None
    assert locator.locate("aws", "evil-region-1").country is None
    assert locator.locate("aws", "eu-central-1").country == "DE"  # in aws_regions.csv
    assert locator.locate("runpod", "CZ").country == "CZ"  # a bare code states its country
    assert locator.locate("vastai", "Bavaria, DE").country == "DE"  # no places file: its text
