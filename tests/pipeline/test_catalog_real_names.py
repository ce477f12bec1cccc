"""The catalog against GPU names recorded from real Vast.ai answers.

tests/fixtures/vastai_gpu_names.json cites where each list comes from: offers of SkyPilot's
Vast.ai catalog (built from live `vastai search offers` answers) and the gpu_name list of a
Vast.ai console search.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.catalog import get_catalog
from pipeline.errors import UnknownGpuError

CATALOG = get_catalog()
FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "vastai_gpu_names.json").read_text(encoding="utf-8")
)
MIB_PER_GIB = 1024
_INSTANCE_TYPE = re.compile(r"^(?P<count>\d+)x-(?P<gpu>.+?)-\d+(?:-\d+)?$")
"""SkyPilot's `{num_gpus}x-{gpu_name with spaces as _}-{cpu_cores}[-{cpu_ram}]`."""


def _recorded_offers() -> list[tuple[str, float]]:
    """(gpu_name, VRAM per GPU in GiB as the Vast.ai parser computes it) per recorded offer."""
    offers = []
    for recording in FIXTURE["skypilot_offers"]["files"]:
        for instance_type, total_mib in recording["data"]:
            match = _INSTANCE_TYPE.match(instance_type)
            assert match, instance_type
            count = int(match["count"])
            offers.append((match["gpu"].replace("_", " "), total_mib / count / MIB_PER_GIB))
    return offers


def test_at_least_95_percent_of_recorded_vastai_offers_get_a_canonical_gpu():
    offers = _recorded_offers()
    unresolved = [(name, vram) for name, vram in offers if CATALOG.resolve(name, vram).gpu is None]
    assert len(offers) == 201
    assert 1 - len(unresolved) / len(offers) >= 0.95, unresolved
    # The one left: a 48 GB-per-GPU "RTX 4090", a memory-modded board, not the 24 GB card.
    assert unresolved == [("RTX 4090", 98280 / 2 / MIB_PER_GIB)]


def test_recorded_china_market_4090d_offers_are_not_counted_as_4090s():
    offers = [(name, vram) for name, vram in _recorded_offers() if "4090D" in name]
    resolved = {CATALOG.resolve(name, vram).gpu for name, vram in offers}
    assert resolved == {"RTX 4090D"}


def test_every_console_gpu_name_but_pre_pascal_mining_and_rare_cards_is_known():
    unknown = []
    for name in FIXTURE["console_gpu_names"]["names"]:
        try:
            CATALOG.ids_for_query(name)
        except UnknownGpuError:
            unknown.append(name)
    assert unknown == [
        "Titan X",
        "Tesla K80",
        "GTX 1050",
        "GTX 980 Ti",
        "GTX 980",
        "GTX 970",
        "GTX 960",
        "GTX 750 Ti",
        "GTX 750",
        "P104-100",
        "P106-100",
        "GP100",
        "Quadro P6000",
        "Quadro P5000",
        "Quadro P2000",
    ]


@pytest.mark.parametrize(
    ("name", "vram_gb", "gpu"),
    [
        ("RTX 3060", 12, "RTX 3060"),
        ("RTX 3070", 8, "RTX 3070"),
        ("RTX 3080", 10, "RTX 3080-10GB"),
        ("RTX 3080", 12, "RTX 3080-12GB"),
        ("RTX 4060", 8, "RTX 4060"),
        ("RTX 4060 Ti", 16, "RTX 4060 Ti-16GB"),
        ("RTX 4070", 12, "RTX 4070"),
        ("RTX 4070 Ti", 12, "RTX 4070 Ti"),
        ("RTX 4070S", 12, "RTX 4070 Super"),
        ("RTX 4070S Ti", 16, "RTX 4070 Ti Super"),
        ("RTX 4080S", 16, "RTX 4080 Super"),
        ("RTX 2080 Ti", 11, "RTX 2080 Ti"),
        ("RTX 2060S", 8, "RTX 2060 Super"),
        ("GTX 1080 Ti", 11, "GTX 1080 Ti"),
        ("GTX 1660 S", 6, "GTX 1660 Super"),
        ("GTX 1060 6GB", 6, "GTX 1060-6GB"),
        ("RTX 3060 laptop", 6, "RTX 3060 Laptop"),
        ("Q RTX 6000", 24, "Quadro RTX 6000"),
        ("Q RTX 5000", 16, "Quadro RTX 5000"),
        ("RTX A2000", 12, "RTX A2000-12GB"),
        ("A30", 24, "A30"),
        ("A100X", 80, "A100X"),
        ("A800 PCIE", 80, "A800-80GB"),
        ("Tesla P100", 16, "P100-16GB"),
        ("Titan V", 12, "Titan V"),
        ("Titan Xp", 12, "Titan Xp"),
        ("RTX 4000Ada", 20, "RTX 4000 Ada"),
        ("RTX 5000Ada", 32, "RTX 5000 Ada"),
        ("RTX PRO 6000 S", 96, "RTX PRO 6000"),
        ("RTX PRO 6000 WS", 96, "RTX PRO 6000"),
        ("GH200 SXM", 95.6, "GH200-96GB"),
    ],
)
def test_vastai_spellings_resolve_with_the_vram_the_offer_reports(name, vram_gb, gpu):
    assert CATALOG.resolve(name, vram_gb).gpu == gpu


# RunPod's documented GPU types: (GPU id, display name, memory GB), from runpod/docs
# references/gpu-types.mdx at commit 0a0dd1bc6444fc70d31017b82f38ca680873972a.
RUNPOD_GPU_TYPES = [
    ("AMD Instinct MI300X OAM", "MI300X", 192),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe", 80),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM", 80),
    ("NVIDIA A30", "A30", 24),
    ("NVIDIA A40", "A40", 48),
    ("NVIDIA B200", "B200", 180),
    ("NVIDIA GeForce RTX 3070", "RTX 3070", 8),
    ("NVIDIA GeForce RTX 3080", "RTX 3080", 10),
    ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti", 12),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", 24),
    ("NVIDIA GeForce RTX 3090 Ti", "RTX 3090 Ti", 24),
    ("NVIDIA GeForce RTX 4070 Ti", "RTX 4070 Ti", 12),
    ("NVIDIA GeForce RTX 4080", "RTX 4080", 16),
    ("NVIDIA GeForce RTX 4080 SUPER", "RTX 4080 SUPER", 16),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", 24),
    ("NVIDIA GeForce RTX 5080", "RTX 5080", 16),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", 32),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 80),
    ("NVIDIA H100 NVL", "H100 NVL", 94),
    ("NVIDIA H100 PCIe", "H100 PCIe", 80),
    ("NVIDIA H200", "H200 SXM", 141),
    ("NVIDIA L4", "L4", 24),
    ("NVIDIA L40", "L40", 48),
    ("NVIDIA L40S", "L40S", 48),
    ("NVIDIA RTX 2000 Ada Generation", "RTX 2000 Ada", 16),
    ("NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada", 20),
    ("NVIDIA RTX 4000 SFF Ada Generation", "RTX 4000 Ada SFF", 20),
    ("NVIDIA RTX 5000 Ada Generation", "RTX 5000 Ada", 32),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", 48),
    ("NVIDIA RTX A2000", "RTX A2000", 6),
    ("NVIDIA RTX A4000", "RTX A4000", 16),
    ("NVIDIA RTX A4500", "RTX A4500", 20),
    ("NVIDIA RTX A5000", "RTX A5000", 24),
    ("NVIDIA RTX A6000", "RTX A6000", 48),
    ("Tesla V100-FHHL-16GB", "V100 FHHL", 16),
    ("Tesla V100-PCIE-16GB", "Tesla V100", 16),
    ("Tesla V100-SXM2-16GB", "V100 SXM2", 16),
    ("Tesla V100-SXM2-32GB", "V100 SXM2 32GB", 32),
]


@pytest.mark.parametrize(("gpu_id", "display_name", "memory_gb"), RUNPOD_GPU_TYPES)
def test_every_documented_runpod_gpu_id_and_its_display_name_resolve_alike(
    gpu_id, display_name, memory_gb
):
    by_id, by_name = CATALOG.resolve(gpu_id, memory_gb), CATALOG.resolve(display_name, memory_gb)
    assert by_id.gpu is not None and by_id.gpu == by_name.gpu
    assert by_name.form_factor in (None, by_id.form_factor)


@pytest.mark.parametrize(
    ("name", "vram_gb", "gpu"),
    [("A10 Tensor Core GPU", 24, "A10"), ("T4 Tensor Core GPU", 16, "T4"),
     ("Tesla V100 Tensor Core GPU", 32, "V100-32GB"), ("B300 SXM6 AC", None, "B300"),
     ("RTX PRO 6000 Blackwell Workstation Edition", 96, "RTX PRO 6000"),
     ("RTX 4070 Ti SUPER", 16, "RTX 4070 Ti Super"), ("H200", 140, "H200-141GB"),
     ("A100-SXM4-80GB", 80, "A100-80GB"), ("Quadro RTX 6000", 24, "Quadro RTX 6000")],
)  # fmt: skip
def test_lium_feed_spellings_resolve_with_the_memory_the_node_states(name, vram_gb, gpu):
    """Lium's `gpu_model` spellings, as gpuhunt's `src/tests/providers/test_lium.py` lists them."""
    assert CATALOG.resolve(name, vram_gb).gpu == gpu
