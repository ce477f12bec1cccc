"""The offer filters, each declared once: one row of `FILTERS`.

A row says what a user gives (the scope field's name, the alias the API and the CLI show, its
type, bounds and description) and what it compares (the offer column and the comparison). From
this table the pipeline builds its scope model (`pipeline.market.scope.OfferScope`) and the CLI
its options; here the same row becomes a SQL condition (`sql_condition`) and a NumPy mask over an
in-memory copy (`warehouse.current`), so both engines apply every declared filter and a test
walks the table (tests/warehouse/test_filters.py). Filters whose value needs a lookup (a GPU
name to ids, countries, a continent, providers) name `resolved`: the pipeline keeps one named
resolver each and hands over the resolved value. Adding a numeric bound is one row.

Comparisons (`Filter.compare`); a NULL column never passes, as in SQL:
- `<=`, `>=`, `=`: the column (or the product of columns, `gpu_count * vram_gb`) against the value.
- `is`: a text column equal to the value; `in`: a text column in a set (an empty set: nothing).
- `contains`: the value is a case-insensitive part of the text column.
- `required`: when the value is true, the flag column must be true.
- `unless`: when the value is false, the flag column must be true (`include_unavailable`).
- `named`: the value names the flag column that must be true (`jurisdiction`: eea or eu).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FILTERS",
    "MAX_GPUS",
    "MAX_HOST_UNITS",
    "Filter",
    "sql_condition",
]

MAX_PRICE_USD = 1e6
"""Highest price bound accepted, USD per GPU-hour."""
MAX_GPUS = 1024
"""Most GPUs an offer filter asks for."""
MAX_VRAM_GB = 1024.0
"""Most memory per GPU a filter asks for (the offer model refuses more)."""
MAX_HOST_UNITS = 1e6
"""Highest vCPU, RAM or disk bound accepted (GB or vCPUs)."""

Compare = Literal["<=", ">=", "=", "is", "in", "contains", "required", "unless", "named"]
_SQL_OPERATORS = {"<=": "<=", ">=": ">=", "=": "=", "is": "="}


@dataclass(frozen=True, slots=True)
class Filter:
    """One filter over offers (see the module docstring for `compare`)."""

    name: str
    """Its name in `OfferFilters` (the resolved value)."""
    column: str
    """The offer column compared; `a * b` for a product of two numeric columns."""
    compare: Compare
    description: str
    type: Any = None
    """The scope field's type (None: the resolver in the pipeline declares it)."""
    ge: float | None = None
    le: float | None = None
    alias: str | None = None
    """How the API and the CLI spell it, when not as the scope field."""
    scope_name: str | None = None
    """The scope field's name, when not `name` (`gpu`: a name resolved to the set `gpus`)."""
    resolved: bool = False
    """Its value is resolved by a named resolver in the pipeline (a lookup)."""
    node: bool = False
    """A bound on one offer, its node or its price (what a front end over single offers
    honours)."""
    more_flags: tuple[str, ...] = ()
    """The CLI's short or older spellings, beside the flag made from the alias or name."""

    @property
    def field(self) -> str:
        """The scope field's name."""
        return self.scope_name or self.name

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.column.split("*"))

    def given(self, value: Any) -> bool:
        """Whether `value` filters anything (None, "" and a false flag mean "any")."""
        if self.compare == "unless":
            return value is False
        if self.compare == "required":
            return value is True
        return value is not None and value != ""

    @property
    def default(self) -> Any:
        """Its value when not given: a flag is false, anything else None."""
        return False if self.compare in ("required", "unless") else None


FILTERS: tuple[Filter, ...] = (
    Filter("gpus", "gpu", "in", "Canonical id (A100-80GB), family (A100) or any provider spelling",
           scope_name="gpu", resolved=True),
    Filter("providers", "provider", "in", "Provider name; repeat or comma-separate for several",
           alias="provider", resolved=True, more_flags=("-p",)),
    Filter("sellers", "seller", "in",
           "Who sells the GPU behind an aggregator's offer (a provider name, e.g. lambda)",
           alias="seller", resolved=True),
    Filter("pricing", "pricing", "is", "on_demand or spot", resolved=True),
    Filter("region", "region", "contains", "Case-insensitive part of the region text", type=str),
    Filter("form_factor", "form_factor", "is", "SXM, PCIe or NVL", resolved=True),
    Filter("vendor", "vendor", "is", "nvidia, amd or intel: who makes the GPU (the catalog's)",
           resolved=True, node=True),
    Filter("countries", "country", "in",
           "ISO 3166-1 alpha-2 codes, repeated or comma-separated, e.g. DE,FR",
           alias="country", resolved=True),
    Filter("continent", "continent", "is", "e.g. Europe, North America", resolved=True),
    Filter("jurisdiction", "eea|eu", "named",
           "eea or eu: offers whose known country is in it (unknown never matches)",
           resolved=True),
    Filter("max_price_per_gpu_hour", "price_per_gpu_hour", "<=", "Upper bound, USD per GPU-hour",
           float, 0, MAX_PRICE_USD, alias="max_price_per_gpu", node=True),
    Filter("max_price_per_hour", "price_per_hour", "<=",
           "Upper bound, USD per hour for the whole offer", float, 0, MAX_PRICE_USD * MAX_GPUS,
           node=True),
    Filter("gpu_count", "gpu_count", "=",
           "Offers with exactly this many GPUs (gpu=H100:8 says the same)", int, 1, MAX_GPUS,
           node=True),
    Filter("min_gpu_count", "gpu_count", ">=", "Offers with at least this many GPUs", int, 1,
           MAX_GPUS, node=True, more_flags=("--min-gpus",)),
    Filter("min_vram_gb", "vram_gb", ">=", "Lower bound, GB of memory per GPU", float, 0,
           MAX_VRAM_GB, node=True),
    Filter("min_total_vram_gb", "gpu_count * vram_gb", ">=",
           "Lower bound, GB of GPU memory over the whole offer", float, 0, MAX_VRAM_GB * MAX_GPUS,
           node=True),
    Filter("min_reliability", "reliability", ">=",
           "Lower bound of the provider's reliability score, 0 to 1", float, 0, 1, node=True),
    Filter("verified", "verified", "required", "Only offers the provider marks verified", bool,
           node=True),
    Filter("nvlink", "nvlink", "required",
           "Only offers whose GPUs are linked by NVLink (e.g. SXM boards)", bool, node=True),
    Filter("min_vcpus", "vcpus", ">=", "Lower bound, vCPUs of the whole offer", float, 0,
           MAX_HOST_UNITS, node=True),
    Filter("min_ram_gb", "ram_gb", ">=", "Lower bound, GB of host RAM", float, 0, MAX_HOST_UNITS,
           node=True),
    Filter("min_disk_gb", "disk_gb", ">=", "Lower bound, GB of disk", float, 0, MAX_HOST_UNITS,
           node=True),
    Filter("include_unavailable", "available", "unless",
           "Also list offers that are listed but not rentable now", bool),
)  # fmt: skip
"""Every filter, in the order the API documents them."""


def sql_condition(f: Filter, value: Any, params: list[Any]) -> str:
    """The SQL condition of filter `f` given `value` (which `f.given`), its parameters added
    to `params`; a NULL column never passes."""
    if f.compare in _SQL_OPERATORS:
        params.append(value)
        return f"{f.column} {_SQL_OPERATORS[f.compare]} ?"
    if f.compare == "in":
        params.append(sorted(value))
        return f"{f.column} IN (SELECT unnest(?))"
    if f.compare == "contains":
        params.append(value)
        return f"contains(lower({f.column}), lower(?))"
    if f.compare == "named":
        if value not in f.column.split("|"):
            raise ValueError(f"{f.name} is one of {f.column.replace('|', ', ')}, not {value!r}")
        return f"{value} IS TRUE"
    return f"{f.column} IS TRUE"  # required, unless
