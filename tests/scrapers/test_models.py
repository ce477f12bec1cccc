from __future__ import annotations

import math
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from scrapers.models import Offer, Pricing
from tests.conftest import OBSERVED_AT

COMMON = dict(
    provider="vastai",
    offer_id="1",
    gpu_raw="H100 SXM",
    pricing=Pricing.ON_DEMAND,
    available=True,
    observed_at=OBSERVED_AT,
)


@given(
    price=st.floats(min_value=0.01, max_value=500, allow_nan=False),
    gpus=st.integers(min_value=1, max_value=72),
)
def test_named_constructors_keep_both_prices_consistent_to_the_cent(price, gpus):
    for offer in (
        Offer.from_instance_price(price_per_hour=price, gpu_count=gpus, **COMMON),
        Offer.from_gpu_price(price_per_gpu_hour=price, gpu_count=gpus, **COMMON),
    ):
        assert abs(offer.price_per_gpu_hour * offer.gpu_count - offer.price_per_hour) < 0.005


def test_constructors_record_which_price_the_provider_quoted():
    assert (
        Offer.from_gpu_price(price_per_gpu_hour=2.0, gpu_count=8, **COMMON).price_quoted_per
        == "gpu"
    )
    instance = Offer.from_instance_price(price_per_hour=16.0, gpu_count=8, **COMMON)
    assert (instance.price_quoted_per, instance.price_per_gpu_hour) == ("instance", 2.0)


def test_inconsistent_prices_are_refused():
    with pytest.raises(ValidationError, match="does not match"):
        Offer(
            price_per_hour=16.0,
            price_per_gpu_hour=16.0,
            gpu_count=8,
            price_quoted_per="instance",
            **COMMON,
        )


@pytest.mark.parametrize("price", [0.0, -1.0, math.inf, math.nan])
def test_prices_must_be_positive_and_finite(price):
    with pytest.raises(ValidationError, match="positive and finite"):
        Offer.from_instance_price(price_per_hour=price, gpu_count=1, **COMMON)


def test_naive_observed_at_is_refused():
    with pytest.raises(ValidationError, match="timezone"):
        Offer.from_instance_price(
            price_per_hour=1.0, gpu_count=1, **{**COMMON, "observed_at": datetime(2026, 1, 1)}
        )


def test_vram_in_the_wrong_unit_is_refused():
    with pytest.raises(ValidationError, match="vram_gb"):
        Offer.from_instance_price(price_per_hour=1.0, gpu_count=1, vram_gb=81559, **COMMON)
