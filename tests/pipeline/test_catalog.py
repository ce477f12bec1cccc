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


@pytest.mark.parametrize("raw", ["NVIDIA GB200 NVL72 extra", "RTX 4090 Z", "Voodoo5 5500"])
def test_names_that_only_look_like_known_gpus_stay_unknown(raw):
    assert CATALOG.resolve(raw).gpu is None


@pytest.mark.parametrize(
    ("raw", "vram_gb", "gpu", "not_gpu"),
    [
        ("RTX 4090D", 24, "RTX 4090D", "RTX 4090"),
        ("NVIDIA GB200 NVL72", 186, "GB200", "B200"),
        ("A100X", 80, "A100X", "A100-80GB"),
        ("RTX 3060 laptop", 6, "RTX 3060 Laptop", "RTX 3060"),
        ("RTX 3070 laptop", 8, "RTX 3070 Laptop", "RTX 3070"),
        (
            "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            96,
            "RTX PRO 6000 Max-Q",
            "RTX PRO 6000",
        ),
        ("RTX 4000 SFF Ada", 20, "RTX 4000 SFF Ada", "RTX 4000 Ada"),
        ("Q RTX 6000", 24, "Quadro RTX 6000", "RTX 6000 Ada"),
    ],
)
def test_a_name_is_never_matched_by_a_substring_of_another_model(raw, vram_gb, gpu, not_gpu):
    assert CATALOG.resolve(raw, vram_gb).gpu == gpu != not_gpu
    assert CATALOG.resolve(not_gpu).gpu == not_gpu


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


@pytest.mark.parametrize(
    ("raw", "vram_gb", "gpu", "form_factor"),
    [
        ("H200 (141 GB SXM5)", 141, "H200-141GB", FormFactor.SXM),  # Lambda
        ("NVIDIA B300 SXM6 AC", None, "B300", FormFactor.SXM),  # RunPod
        ("RTX PRO 6000 Blackwell Server Edition (High Memory)", 96, "RTX PRO 6000", None),
        ("RTX PRO 6000 Blackwell Server Edition (Standard Memory)", 96, "RTX PRO 6000", None),
        ("NVIDIA HGX B300", 270, "B300", FormFactor.SXM),  # CoreWeave
        ("H100-PCIe", None, "H100-80GB", FormFactor.PCIE),  # EU providers
        ("B300-SXM", None, "B300", FormFactor.SXM),
        ("RTX PRO 6000 Blackwell Max-Q", None, "RTX PRO 6000 Max-Q", None),
        ("Tesla V100 16GB", None, "V100-16GB", None),
        ("B300 SXM6 268GB", None, "B300", FormFactor.SXM),
        ("Tesla V100-FHHL-16GB", 16, "V100-16GB", FormFactor.PCIE),
        ("NVIDIA GeForce RTX 4080 SUPER", 16, "RTX 4080 Super", None),
        ("NVIDIA RTX 4000 SFF Ada Generation", 20, "RTX 4000 SFF Ada", None),
        ("NVIDIA RTX 2000 Ada Generation", 16, "RTX 2000 Ada", None),
        ("AMD Instinct MI300X OAM", 192, "MI300X", None),
        ("NVIDIA H200", 141, "H200-141GB", FormFactor.SXM),
        ("rtx4090", None, "RTX 4090", None),
        ("RTX 6000Ada", None, "RTX 6000 Ada", None),
    ],
)
def test_names_resolve_by_what_they_say(raw, vram_gb, gpu, form_factor):
    resolution = CATALOG.resolve(raw, vram_gb)
    assert (resolution.gpu, resolution.form_factor) == (gpu, form_factor)


@pytest.mark.parametrize("memory", ["262 GB", "268GB", "270 GB", "288GB"])
def test_a_stated_memory_picks_the_nearest_size_within_ten_percent(memory):
    assert CATALOG.resolve(f"B300 {memory}").gpu == "B300"


def test_a_stated_memory_far_from_every_size_leaves_the_gpu_unknown():
    assert CATALOG.resolve("A100 PCIe 20GB").gpu is None
    assert CATALOG.resolve("B300 200GB").gpu is None


def test_the_name_s_memory_wins_over_a_reported_vram_that_fits_nothing():
    assert CATALOG.resolve("A100 SXM4 40GB", 39.5).gpu == "A100-40GB"
    assert CATALOG.resolve("V100 32GB", 31.7).gpu == "V100-32GB"


@pytest.mark.parametrize(
    "raw",
    [
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "RTX PRO 6000 S",
        "RTX PRO 6000 WS",
        "RTX Pro 6000",
    ],
)
def test_editions_of_one_board_share_an_id(raw):
    assert CATALOG.resolve(raw).gpu == "RTX PRO 6000"


def test_sxm_and_pcie_spellings_resolve_to_one_id_with_their_own_form_factor():
    sxm, pcie = CATALOG.resolve("H100 SXM5"), CATALOG.resolve("H100 PCIe")
    assert sxm.gpu == pcie.gpu == "H100-80GB"
    assert (sxm.form_factor, pcie.form_factor) == (FormFactor.SXM, FormFactor.PCIE)


def test_a_form_factor_the_catalog_lacks_for_a_model_leaves_it_unknown():
    assert CATALOG.resolve("H100 NVL", 80).gpu is None  # the NVL part is 94 GB


def test_resolutions_are_remembered_per_name_and_vram():
    assert CATALOG.resolve("RTX 4070S Ti", 16) is CATALOG.resolve("RTX 4070S Ti", 16)


def test_every_row_cites_a_public_spec_sheet():
    for variant in CATALOG.variants:
        assert variant.source.startswith("https://"), variant.id


def test_cards_without_bf16_carry_fp16_tflops_and_no_bf16_figure():
    for variant in CATALOG.variants:
        if not variant.bf16:
            assert variant.bf16_tflops_dense is None and variant.fp16_tflops_dense, variant.id
    no_bf16 = {v.id for v in CATALOG.variants if not v.bf16}
    assert {"V100-16GB", "T4", "RTX 2080 Ti", "Quadro RTX 6000", "GTX 1080 Ti"} <= no_bf16
    assert not {"RTX 3090", "RTX 4090", "A100-80GB", "RTX A6000"} & no_bf16


def test_the_catalog_covers_consumer_and_workstation_cards():
    for gpu_id in [
        "RTX 3060",
        "RTX 3080-10GB",
        "RTX 4070 Ti Super",
        "RTX 5080",
        "RTX 2080 Ti",
        "GTX 1660 Super",
        "RTX A2000-6GB",
        "RTX 5000 Ada",
        "Quadro RTX 8000",
        "Titan RTX",
    ]:
        assert gpu_id in CATALOG.ids


def test_a_consumer_family_query_means_every_size_and_nothing_that_only_looks_alike():
    assert CATALOG.ids_for_query("RTX 3080") == {"RTX 3080-10GB", "RTX 3080-12GB"}
    assert CATALOG.ids_for_query("GeForce RTX 4090") == {"RTX 4090"}
    assert CATALOG.ids_for_query("RTX 4070") == {"RTX 4070"}
    assert CATALOG.ids_for_query("RTX PRO 6000") == {"RTX PRO 6000"}
