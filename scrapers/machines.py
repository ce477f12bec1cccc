"""A cloud's machine table: what a price list names (`p5.48xlarge`, `Standard_ND96isr_H100_v5`)
and does not describe (GPU model, count, VRAM, form factor, vCPUs, RAM), read from a data file
beside the provider module (`scrapers/data/<provider>_*.csv`, one source per row).

`kind` says what the machine carries: `gpu` (whole GPUs), `fraction` (a share of one GPU, e.g.
AWS g6f or Azure NVadsA10 v5: rejected until an offer can carry the fraction, never counted as a
whole GPU) or `accelerator` (not a GPU: Inferentia, Trainium, an FPGA; rejected with its name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from scrapers.models import FormFactor

__all__ = ["Machine", "machines_of"]

Kind = Literal["gpu", "fraction", "accelerator"]
KINDS: frozenset[str] = frozenset({"gpu", "fraction", "accelerator"})


def _is_kind(value: str) -> TypeGuard[Kind]:
    return value in KINDS


@dataclass(frozen=True, slots=True)
class Machine:
    name: str
    kind: Kind
    gpu: str
    gpu_count: int
    vram_gb: float | None
    form_factor: FormFactor | None
    vcpus: float | None
    ram_gb: float | None

    def check_whole_gpus(self) -> None:
        """Raises, for the parser to reject, unless the machine carries whole GPUs."""
        if self.kind == "fraction":
            raise ValueError(
                f"{self.name} has a fraction of one {self.gpu} (fractional GPUs are not offered "
                "as whole GPUs)"
            )
        if self.kind == "accelerator":
            raise ValueError(f"{self.name} carries {self.gpu}, not a GPU")

    def offer_fields(self) -> dict[str, Any]:
        return {
            "gpu_raw": self.gpu,
            "gpu_count": self.gpu_count,
            "vram_gb": self.vram_gb,
            "form_factor": self.form_factor,
            "vcpus": self.vcpus,
            "ram_gb": self.ram_gb,
        }


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def machines_of(rows: Iterable[Mapping[str, str]], key: str) -> dict[str, Machine]:
    """The machines of a table's rows, by the column `key` names; raises on a malformed row (a
    broken data file is a bug, found at import)."""
    machines: dict[str, Machine] = {}
    for row in rows:
        name, kind = row[key], row["kind"]
        if not _is_kind(kind) or not row["source"].strip():
            raise ValueError(f"machine table row {name!r}: kind must be one of {sorted(KINDS)} "
                             "and a source given")  # fmt: skip
        machines[name] = Machine(
            name=name,
            kind=kind,
            gpu=row["gpu"],
            gpu_count=int(row["gpu_count"]),
            vram_gb=_number(row["vram_gb"]),
            form_factor=FormFactor(row["form_factor"]) if row["form_factor"] else None,
            vcpus=_number(row["vcpus"]),
            ram_gb=_number(row["ram_gb"]),
        )
    return machines
