from __future__ import annotations

import pytest

from pipeline.catalog import get_catalog
from pipeline.errors import UnknownGpuError
from scrapers.models import FormFactor

CATALOG = get_catalog()


@pytest.mark.parametrize(
    ("raw", "vram_gb", "gpu", "form_factor"),
    [
        ("NVIDIA A100-SXM4-80GB", None, "A100-80GB", FormFactor.SXM),
        ("A100 SXM4 80GB", None, "A100-80GB", FormFactor.SXM),
        ("a100_80gb", None, "A100-80GB", None),
        ("A100 PCIE", 80, "A100-80GB", FormFactor.PCIE),
        ("A100 PCIE", 40, "A100-40GB", FormFactor.PCIE),
        ("A100 SXM4", 80, "A100-80GB", FormFactor.SXM),
        ("H100 NVL", None, "H100-94GB", FormFactor.NVL),
        ("GeForce RTX 4090", None, "RTX 4090", None),
        ("H100 SXM", 79.6, "H100-80GB", FormFactor.SXM),
        ("NVIDIA H100 80GB HBM3", 80, "H100-80GB", FormFactor.SXM),
        ("H100 (80 GB SXM5)", 80, "H100-80GB", FormFactor.SXM),
        ("NVIDIA HGX H100", 80, "H100-80GB", FormFactor.SXM),
        ("NVIDIA H100 PCIe", 80, "H100-80GB", FormFactor.PCIE),
        ("NVIDIA A100", 80, "A100-80GB", None),
        ("NVIDIA H200 NVL", 143, "H200-141GB", FormFactor.NVL),
        ("RTX 6000Ada", 48, "RTX 6000 Ada", None),
    ],
)
def test_provider_spellings_resolve_to_one_canonical_id_and_form_factor(
    raw, vram_gb, gpu, form_factor
):
    resolution = CATALOG.resolve(raw, vram_gb)
    assert (resolution.gpu, resolution.form_factor) == (gpu, form_factor)


@pytest.mark.parametrize("raw", ["RTX 4090D", "NVIDIA GB200 NVL72 extra", "A100X", "Q RTX 8000"])
def test_names_that_only_look_like_known_gpus_stay_unknown(raw):
    assert CATALOG.resolve(raw).gpu is None


def test_gb200_is_not_mistaken_for_b200():
    assert CATALOG.resolve("NVIDIA GB200 NVL72", 186).gpu == "GB200"
    assert CATALOG.resolve("NVIDIA HGX B200", 180).gpu == "B200"


def test_an_ambiguous_name_without_vram_is_left_unknown_rather_than_guessed():
    assert CATALOG.resolve("A100 SXM4").gpu is None


def test_reported_vram_that_matches_no_variant_leaves_the_gpu_unknown():
    assert CATALOG.resolve("A100 SXM4", 24).gpu is None


def test_sxm_and_pcie_stay_separate_variants_of_one_id():
    form_factors = {v.form_factor for v in CATALOG.variants_of("A100-80GB")}
    assert form_factors == {FormFactor.SXM, FormFactor.PCIE}


def test_a_family_query_matches_every_size_of_that_family():
    assert CATALOG.ids_for_query("A100") == {"A100-40GB", "A100-80GB"}
    assert CATALOG.ids_for_query("h100") == {"H100-80GB", "H100-94GB"}


@pytest.mark.parametrize("name", ["A100-80GB", "a100 80gb", "NVIDIA A100-SXM4-80GB", "A100_80GB"])
def test_every_spelling_of_an_id_queries_the_same_id(name):
    assert CATALOG.ids_for_query(name) == {"A100-80GB"}


def test_an_unknown_query_names_the_closest_known_ids():
    with pytest.raises(UnknownGpuError) as info:
        CATALOG.ids_for_query("A100-90GB")
    assert "A100-80GB" in info.value.closest
    assert "closest: A100-80GB" in str(info.value)


def test_the_fixed_canonical_ids_are_in_the_catalog():
    for gpu_id in [
        "A100-40GB",
        "A100-80GB",
        "H100-80GB",
        "H100-94GB",
        "H200-141GB",
        "B200",
        "L40S",
        "L4",
        "A10",
        "RTX 4090",
        "RTX A6000",
        "RTX 6000 Ada",
        "RTX 4000 SFF Ada",
        "RTX PRO 6000",
    ]:
        assert gpu_id in CATALOG.ids
    assert CATALOG.ids_for_query("V100") == {"V100-16GB", "V100-32GB"}


def test_every_variant_has_vram_and_a_source():
    for variant in CATALOG.variants:
        assert variant.vram_gb > 0
        assert variant.source
