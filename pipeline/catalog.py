"""The GPU catalog (a data file) and the resolver from provider spellings to canonical ids.

Names are compared as sets of tokens after normalization (case, punctuation, "80 GB" → "80gb",
vendor words dropped), never as substrings: `RTX 4090D` is not `RTX 4090`, `GB200` is not `B200`.
An alias may belong to several variants (`A100 SXM4` is 40 GB or 80 GB); the VRAM the provider
reports then decides. SXM, PCIe and NVL variants of one id stay apart through `form_factor`.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pipeline.errors import UnknownGpuError
from scrapers.models import FormFactor

__all__ = ["Catalog", "GpuSpec", "GpuVariant", "Resolution", "get_catalog", "name_key"]

_VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd", "instinct"})
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*g(?:i?b)?\b")
_NON_ALNUM = re.compile(r"[^a-z0-9.]+")
VRAM_TOLERANCE = 0.1
"""A reported VRAM within 10% of a variant's size matches it (24564 MiB is a 24 GB card)."""


def name_key(name: str) -> str:
    """Order-insensitive key of a GPU name: `NVIDIA A100-SXM4-80GB` → `80gb a100 sxm4`."""
    text = _SIZE.sub(r" \1gb ", name.lower())
    tokens = {t for t in _NON_ALNUM.sub(" ", text).split() if t not in _VENDOR_WORDS}
    return " ".join(sorted(tokens))


@dataclass(frozen=True, slots=True)
class GpuVariant:
    """One row of the catalog: a canonical id in one form factor."""

    id: str
    family: str
    vendor: str
    vram_gb: float
    form_factor: FormFactor | None
    bf16_tflops_dense: float | None
    fp16_tflops_dense: float | None
    mem_bw_gbps: float | None
    nvlink: str
    aliases: tuple[str, ...]
    source: str


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """A canonical GPU id with everything its variants share, for listing."""

    id: str
    family: str
    vendor: str
    vram_gb: float
    form_factors: tuple[str, ...]
    bf16_tflops_dense: float | None
    mem_bw_gbps: float | None
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Resolution:
    gpu: str | None
    form_factor: FormFactor | None
    vram_gb: float | None = None


def _float_or_none(text: str) -> float | None:
    return float(text) if text.strip() else None


class Catalog:
    def __init__(self, variants: Iterable[GpuVariant]) -> None:
        self.variants = tuple(variants)
        self._by_alias: dict[str, list[GpuVariant]] = defaultdict(list)
        self._ids_by_family: dict[str, set[str]] = defaultdict(set)
        for variant in self.variants:
            for alias in {variant.id, *variant.aliases}:
                key = name_key(alias)
                if variant not in self._by_alias[key]:
                    self._by_alias[key].append(variant)
            self._ids_by_family[name_key(variant.family)].add(variant.id)
        self.ids = tuple(dict.fromkeys(v.id for v in self.variants))

    @classmethod
    def from_csv(cls, text: str) -> Catalog:
        rows = csv.DictReader(text.splitlines())
        return cls(
            GpuVariant(
                id=row["id"],
                family=row["family"],
                vendor=row["vendor"],
                vram_gb=float(row["vram_gb"]),
                form_factor=FormFactor(row["form_factor"]) if row["form_factor"] else None,
                bf16_tflops_dense=_float_or_none(row["bf16_tflops_dense"]),
                fp16_tflops_dense=_float_or_none(row["fp16_tflops_dense"]),
                mem_bw_gbps=_float_or_none(row["mem_bw_gbps"]),
                nvlink=row["nvlink"],
                aliases=tuple(a for a in row["aliases"].split("|") if a),
                source=row["source"],
            )
            for row in rows
        )

    def resolve(self, raw: str, vram_gb: float | None = None) -> Resolution:
        """Map a provider's spelling (and its reported VRAM, if any) to a canonical id.

        Unknown or ambiguous names give `gpu=None`: the offer is kept with its raw name.
        """
        candidates = self._by_alias.get(name_key(raw), [])
        if vram_gb is not None:
            candidates = [
                v for v in candidates if abs(v.vram_gb - vram_gb) <= VRAM_TOLERANCE * v.vram_gb
            ]
        ids = {v.id for v in candidates}
        if len(ids) != 1:
            return Resolution(None, None)
        form_factors = {v.form_factor for v in candidates}
        form_factor = form_factors.pop() if len(form_factors) == 1 else None
        return Resolution(candidates[0].id, form_factor, candidates[0].vram_gb)

    def ids_for_query(self, name: str) -> frozenset[str]:
        """The canonical ids a user's `gpu=` value means: a family, an id or any alias.

        `A100` is the whole family (40 GB and 80 GB); `NVIDIA A100-SXM4-80GB` is `A100-80GB`.
        Raises `UnknownGpuError` naming the closest ids.
        """
        key = name_key(name)
        family = self._ids_by_family.get(key)
        if family:
            return frozenset(family)
        candidates = self._by_alias.get(key)
        if candidates:
            return frozenset(v.id for v in candidates)
        raise UnknownGpuError(name, self.closest(name))

    def closest(self, name: str, n: int = 3) -> list[str]:
        by_key = {name_key(i): i for i in self.ids}
        by_key.update({alias_key: variants[0].id for alias_key, variants in self._by_alias.items()})
        matches = difflib.get_close_matches(name_key(name), list(by_key), n=n * 3, cutoff=0.4)
        return list(dict.fromkeys(by_key[m] for m in matches))[:n]

    def variants_of(self, gpu_id: str) -> list[GpuVariant]:
        return [v for v in self.variants if v.id == gpu_id]

    def specs(self) -> list[GpuSpec]:
        specs = []
        for gpu_id in self.ids:
            variants = self.variants_of(gpu_id)
            first = variants[0]
            specs.append(
                GpuSpec(
                    id=gpu_id,
                    family=first.family,
                    vendor=first.vendor,
                    vram_gb=first.vram_gb,
                    form_factors=tuple(str(v.form_factor) for v in variants if v.form_factor),
                    bf16_tflops_dense=max(
                        (v.bf16_tflops_dense for v in variants if v.bf16_tflops_dense),
                        default=None,
                    ),
                    mem_bw_gbps=max(
                        (v.mem_bw_gbps for v in variants if v.mem_bw_gbps), default=None
                    ),
                    aliases=tuple(dict.fromkeys(a for v in variants for a in v.aliases)),
                )
            )
        return specs


@cache
def get_catalog() -> Catalog:
    """The catalog shipped in `pipeline/data/gpus.csv`, read once on first use."""
    text = resources.files("pipeline.data").joinpath("gpus.csv").read_text(encoding="utf-8")
    return Catalog.from_csv(text)
