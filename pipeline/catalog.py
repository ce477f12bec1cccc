"""The GPU catalog (a data file) and the resolver from provider spellings to canonical ids.

A name resolves by what it says (`pipeline.gpu_names`): its model words pick the catalog rows of
that model, a stated memory (or the VRAM the provider reports) picks the nearest size within 10%,
a stated form factor picks the SXM, PCIe or NVL variant. Never substrings: `RTX 4090D` is not
`RTX 4090`, `GB200` is not `B200`, `A100X` is not `A100`, a laptop part is not the desktop card.
An alias listed in the data file wins over that reading when it matches word for word (RunPod's
`NVIDIA H100 80GB HBM3` is the SXM part). Unknown or ambiguous names give `gpu=None`.
"""

from __future__ import annotations

import csv
import difflib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pipeline.errors import UnknownGpuError
from pipeline.gpu_names import full_key, parse_name
from scrapers.models import FormFactor

__all__ = ["Catalog", "GpuSpec", "GpuVariant", "Resolution", "get_catalog", "name_key"]

VRAM_TOLERANCE = 0.1
"""A memory within 10% of a size picks it (24564 MiB is a 24 GB card; B300 is 262-288 GB)."""
_RESOLVE_CACHE_MAX = 65_536
"""Distinct (name, VRAM) pairs remembered; a market has a few hundred."""


def name_key(name: str) -> str:
    """Order-insensitive key of a GPU name's model words: `NVIDIA A100-SXM4-80GB` → `a100`."""
    return parse_name(name).key


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
    """Dense tensor FP16 with FP32 accumulate; on cards without fast FP16, the FP32 peak."""
    bf16: bool
    """Whether the card computes in BF16; without it, training runs FP16 with loss scaling."""
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
    bf16: bool
    bf16_tflops_dense: float | None
    fp16_tflops_dense: float | None
    mem_bw_gbps: float | None
    aliases: tuple[str, ...]
    source: str


@dataclass(frozen=True, slots=True)
class Resolution:
    gpu: str | None
    form_factor: FormFactor | None
    vram_gb: float | None = None


_UNKNOWN = Resolution(None, None)


def _float_or_none(text: str) -> float | None:
    return float(text) if text.strip() else None


def _nearest_size(variants: Sequence[GpuVariant], memory_gb: float) -> list[GpuVariant]:
    """The variants of the size nearest `memory_gb`, if within `VRAM_TOLERANCE` of it."""
    if not variants:
        return []
    nearest = min({v.vram_gb for v in variants}, key=lambda size: abs(size - memory_gb))
    if abs(nearest - memory_gb) > VRAM_TOLERANCE * nearest:
        return []
    return [v for v in variants if v.vram_gb == nearest]


QUERIES_KEPT = 4096
"""`gpu=` values whose ids a catalog remembers (bounded: the names come from users)."""


class Catalog:
    def __init__(self, variants: Iterable[GpuVariant]) -> None:
        self.variants = tuple(variants)
        self._exact: dict[str, list[GpuVariant]] = defaultdict(list)
        self._by_model: dict[str, list[GpuVariant]] = defaultdict(list)
        self._ids_by_family: dict[str, set[str]] = defaultdict(set)
        for variant in self.variants:
            for alias in (variant.id, *variant.aliases):
                keys = ((self._exact, full_key(alias)), (self._by_model, name_key(alias)))
                for index, key in keys:
                    if variant not in index[key]:
                        index[key].append(variant)
            self._ids_by_family[full_key(variant.family)].add(variant.id)
        self.ids = tuple(dict.fromkeys(v.id for v in self.variants))
        self._variants_of: dict[str, tuple[GpuVariant, ...]] = {
            gpu_id: tuple(v for v in self.variants if v.id == gpu_id) for gpu_id in self.ids
        }
        self._resolved: dict[tuple[str, float | None], Resolution] = {}
        self._queried: dict[str, frozenset[str]] = {}

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
                bf16=row["bf16"] == "yes",
                mem_bw_gbps=_float_or_none(row["mem_bw_gbps"]),
                nvlink=row["nvlink"],
                aliases=tuple(a for a in row["aliases"].split("|") if a),
                source=row["source"],
            )
            for row in rows
        )

    def _candidates(self, name: str, vram_gb: float | None) -> list[GpuVariant]:
        """The rows a name (and a reported VRAM) can mean; several ids when it is ambiguous."""
        signature = parse_name(name)
        exact = self._exact.get(full_key(name))
        memories: tuple[float | None, ...]
        if exact:
            candidates, memories = exact, (vram_gb,)
        else:
            candidates = self._by_model.get(signature.key, [])
            if signature.form_factor is not None:
                stated = [v for v in candidates if v.form_factor == signature.form_factor]
                candidates = stated or [v for v in candidates if v.form_factor is None]
            memories = (signature.memory_gb, vram_gb)
        given = [m for m in memories if m is not None]
        for memory in given:
            sized = _nearest_size(candidates, memory)
            if sized:
                return sized
        return [] if given else candidates

    def resolve(self, raw: str, vram_gb: float | None = None) -> Resolution:
        """Map a provider's spelling (and its reported VRAM, if any) to a canonical id.

        Unknown or ambiguous names give `gpu=None`: the offer is kept with its raw name.
        Remembered per (name, VRAM): ingest asks the same few hundred questions again and again.
        """
        key = (raw, vram_gb)
        found = self._resolved.get(key)
        if found is None:
            if len(self._resolved) >= _RESOLVE_CACHE_MAX:
                self._resolved.clear()
            found = self._resolved[key] = self._resolve(raw, vram_gb)
        return found

    def _resolve(self, raw: str, vram_gb: float | None) -> Resolution:
        candidates = self._candidates(raw, vram_gb)
        if len({v.id for v in candidates}) != 1:
            return _UNKNOWN
        form_factors = {v.form_factor for v in candidates}
        if form_factors == {None}:
            # A card the catalog keeps in one form (GH200, RTX cards): the name's word stands.
            form_factor = parse_name(raw).form_factor
        else:
            form_factor = form_factors.pop() if len(form_factors) == 1 else None
        return Resolution(candidates[0].id, form_factor, candidates[0].vram_gb)

    def ids_for_query(self, name: str) -> frozenset[str]:
        """The canonical ids a user's `gpu=` value means: a family, an id or any spelling.

        `A100` is the whole family (40 GB and 80 GB); `NVIDIA A100-SXM4-80GB` is `A100-80GB`.
        Raises `UnknownGpuError` naming the closest ids. Known answers are remembered (a
        server is asked the same few names over and over), up to `QUERIES_KEPT` names.
        """
        known = self._queried.get(name)
        if known is not None:
            return known
        family = self._ids_by_family.get(full_key(name))
        candidates = self._candidates(name, None) if not family else []
        if not family and not candidates:
            raise UnknownGpuError(name, self.closest(name))
        ids = frozenset(family or (v.id for v in candidates))
        if len(self._queried) < QUERIES_KEPT:
            self._queried[name] = ids
        return ids

    def closest(self, name: str, n: int = 3) -> list[str]:
        """The ids whose spellings look most like `name` (for "did you mean" messages)."""
        spellings = {a.lower(): v.id for v in reversed(self.variants) for a in (v.id, *v.aliases)}
        matches = difflib.get_close_matches(name.lower(), list(spellings), n=n * 3, cutoff=0.4)
        return list(dict.fromkeys(spellings[m] for m in matches))[:n]

    def variants_of(self, gpu_id: str) -> list[GpuVariant]:
        """The variants of one id, in catalog order (a ranking asks this for every offer shape)."""
        return list(self._variants_of.get(gpu_id, ()))

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
                    bf16=first.bf16,
                    bf16_tflops_dense=_highest(v.bf16_tflops_dense for v in variants),
                    fp16_tflops_dense=_highest(v.fp16_tflops_dense for v in variants),
                    mem_bw_gbps=_highest(v.mem_bw_gbps for v in variants),
                    aliases=tuple(dict.fromkeys(a for v in variants for a in v.aliases)),
                    source=first.source,
                )
            )
        return specs


def _highest(values: Iterable[float | None]) -> float | None:
    return max((v for v in values if v), default=None)


@cache
def get_catalog() -> Catalog:
    """The catalog shipped in `pipeline/data/gpus.csv`, read once on first use."""
    text = resources.files("pipeline.data").joinpath("gpus.csv").read_text(encoding="utf-8")
    return Catalog.from_csv(text)
