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
        "A16",
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
