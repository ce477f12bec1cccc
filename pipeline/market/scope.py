"""Which offers: the one filter scope every front end shares.

`OfferScope` declares each filter once (name, type, bounds, description); `resolve` turns it
into the warehouse's `OfferFilters` (GPU names to canonical ids, providers and places checked).
Offers, exports, history, quotes, alerts, the CLI and the web page all take it. A front end that
honours only some fields names them (`HISTORY_SCOPE`, ...): its API model and CLI options are
built from those fields (`scope_fields`), so any other field is a 422 or a usage error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from pipeline.base import provider_module
from pipeline.catalog import Catalog, get_catalog
from pipeline.errors import PipelineError
from pipeline.location import get_locator
from pipeline.market.catalog_figures import gpu_figures
from scrapers.models import FormFactor, Pricing
from warehouse import OfferFilters

__all__ = [
    "ALL_SCOPE",
    "MAX_NAME_CHARS",
    "MAX_NAMES",
    "NODE_SCOPE",
    "Name",
    "OfferScope",
    "PLACE_SCOPE",
    "front_end_model",
    "resolve",
    "scope_fields",
    "split_names",
]

MAX_NAMES = 50
"""Most values of a list filter (providers, countries)."""
MAX_NAME_CHARS = 200
"""Longest GPU, provider, region or place name accepted (the longest real one is ~60)."""
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
"""A GPU, model, provider, region or place name as accepted anywhere: 1 to 200 characters."""
MAX_PRICE_USD = 1e6
"""Highest price bound accepted, USD per GPU-hour."""
MAX_GPUS = 1024
"""Most GPUs an offer filter asks for."""
MAX_VRAM_GB = 1024.0
"""Most memory per GPU a filter asks for (the offer model refuses more)."""
MAX_HOST_UNITS = 1e6
"""Highest vCPU, RAM or disk bound accepted (GB or vCPUs)."""


def split_names(values: Any) -> tuple[str, ...]:
    """`["a,b", "c"]` or `"a,b"` -> `("a", "b", "c")`: repeated or comma-separated values."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list | tuple | set | frozenset):  # a JSON number or boolean
        raise ValueError("give names as text or a list of texts")
    return tuple(n.strip() for v in values for n in str(v).split(",") if n.strip())


def _split_values(cls: type, values: Any) -> tuple[str, ...]:
    return split_names(values)


def _lower_value(cls: type, value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _gpu_shorthand(cls: type, data: Any) -> Any:
    """`gpu=H100:8` (as in `sky show-gpus H100:8`): the GPU, and exactly 8 of them per offer."""
    if not isinstance(data, dict) or not isinstance(data.get("gpu"), str):
        return data
    name, colon, count = data["gpu"].rpartition(":")
    if not colon:
        return data
    if not count.strip().isdigit() or not name.strip():
        raise ValueError(f"gpu={data['gpu']!r}: write NAME:COUNT with a whole count, e.g. H100:8")
    if not 1 <= int(count) <= MAX_GPUS:
        raise ValueError(f"gpu={data['gpu']!r}: the count must be 1 to {MAX_GPUS}")
    given = data.get("gpu_count")
    if str(given).strip().isdigit() and int(given) != int(count):
        raise ValueError(f"gpu={data['gpu']!r} says {int(count)} GPUs but gpu_count says {given}")
    return {**data, "gpu": name.strip(), "gpu_count": int(count)}


def _gpu_shorthand_checked(cls: type, data: Any) -> Any:
    """`_gpu_shorthand`'s checks for a model without `gpu_count`: the data unchanged, so the
    full model reads the count (and says whether its front end honours one)."""
    _gpu_shorthand(cls, data)
    return data


class OfferScope(BaseModel):
    """Which offers. Field names are the pipeline's; aliases are the API's and the CLI's."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )

    gpu: Name | None = Field(
        None,
        description="Canonical id (A100-80GB), family (A100) or any provider spelling",
        examples=["A100-80GB"],
    )
    providers: tuple[str, ...] = Field(
        (),
        alias="provider",
        max_length=MAX_NAMES,
        description="Provider name; repeat or comma-separate for several",
    )
    pricing: Pricing | None = Field(None, description="on_demand or spot")
    region: Name | None = Field(None, description="Case-insensitive part of the region text")
    form_factor: FormFactor | None = Field(None, description="SXM, PCIe or NVL")
    countries: tuple[str, ...] = Field(
        (),
        alias="country",
        max_length=MAX_NAMES,
        description="ISO 3166-1 alpha-2 codes, repeated or comma-separated, e.g. DE,FR",
    )
    continent: Name | None = Field(None, description="e.g. Europe, North America")
    jurisdiction: Literal["eea", "eu"] | None = Field(
        None, description="eea or eu: offers whose known country is in it (unknown never matches)"
    )
    max_price_per_gpu_hour: float | None = Field(
        None,
        alias="max_price_per_gpu",
        ge=0,
        le=MAX_PRICE_USD,
        allow_inf_nan=False,
        description="Upper bound, USD per GPU-hour",
    )
    max_price_per_hour: float | None = Field(
        None,
        ge=0,
        le=MAX_PRICE_USD * MAX_GPUS,
        allow_inf_nan=False,
        description="Upper bound, USD per hour for the whole offer",
    )
    gpu_count: int | None = Field(
        None,
        ge=1,
        le=MAX_GPUS,
        description="Offers with exactly this many GPUs (gpu=H100:8 says the same)",
    )
    min_gpu_count: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="Offers with at least this many GPUs"
    )
    min_vram_gb: float | None = Field(
        None, ge=0, le=MAX_VRAM_GB, description="Lower bound, GB of memory per GPU"
    )
    min_total_vram_gb: float | None = Field(
        None,
        ge=0,
        le=MAX_VRAM_GB * MAX_GPUS,
        description="Lower bound, GB of GPU memory over the whole offer",
    )
    min_reliability: float | None = Field(
        None, ge=0, le=1, description="Lower bound of the provider's reliability score, 0 to 1"
    )
    verified: bool = Field(False, description="Only offers the provider marks verified")
    nvlink: bool = Field(
        False, description="Only offers whose GPUs are linked by NVLink (e.g. SXM boards)"
    )
    min_vcpus: float | None = Field(
        None, ge=0, le=MAX_HOST_UNITS, description="Lower bound, vCPUs of the whole offer"
    )
    min_ram_gb: float | None = Field(
        None, ge=0, le=MAX_HOST_UNITS, description="Lower bound, GB of host RAM"
    )
    min_disk_gb: float | None = Field(
        None, ge=0, le=MAX_HOST_UNITS, description="Lower bound, GB of disk"
    )
    include_unavailable: bool = Field(
        False, description="Also list offers that are listed but not rentable now"
    )

    _split = field_validator("providers", "countries", mode="before")(_split_values)
    _lower = field_validator("jurisdiction", mode="before")(_lower_value)
    _shorthand = model_validator(mode="before")(_gpu_shorthand)

    def given(self) -> set[str]:
        """The fields set to something other than "any"."""
        return {name for name in _SCOPE_FIELDS if getattr(self, name) != _ANY[name]}

    def check_honoured(self, honoured: Collection[str], where: str) -> None:
        """Refuse filters that `where` (a front end) does not apply."""
        extra = sorted(self.given() - set(honoured))
        if extra:
            raise PipelineError(
                f"{where} does not filter on {', '.join(extra)}; "
                f"it takes {', '.join(sorted(honoured))}"
            )


_SCOPE_FIELDS: tuple[str, ...] = tuple(OfferScope.model_fields)
_ANY = {name: field.default for name, field in OfferScope.model_fields.items()}

ALL_SCOPE = frozenset(_SCOPE_FIELDS)
PLACE_SCOPE = frozenset(
    {"gpu", "providers", "pricing", "region", "countries", "continent", "jurisdiction"}
)
"""What every front end honours: the GPU, who sells it, how it is priced and where it is."""
NODE_SCOPE = frozenset(
    {
        "gpu_count",
        "min_gpu_count",
        "min_vram_gb",
        "min_total_vram_gb",
        "max_price_per_hour",
        "min_reliability",
        "verified",
        "nvlink",
        "min_vcpus",
        "min_ram_gb",
        "min_disk_gb",
    }
)
"""The shape of one offer (its node): what a front end over individual offers can honour."""


def resolve(scope: OfferScope, catalog: Catalog | None = None, **view: Any) -> OfferFilters:
    """The warehouse filters for `scope` (unknown GPU, provider, country or continent raise);
    `view` adds `sort`, `limit`, `as_of` or `include_unavailable`."""
    for name in scope.providers:
        provider_module(name)
    locator = get_locator()
    cat = catalog or get_catalog()
    values = {
        "gpus": cat.ids_for_query(scope.gpu) if scope.gpu else None,
        "providers": frozenset(scope.providers) or None,
        "pricing": str(scope.pricing) if scope.pricing else None,
        "region": scope.region,
        "form_factor": str(scope.form_factor) if scope.form_factor else None,
        "max_price_per_gpu_hour": scope.max_price_per_gpu_hour,
        "max_price_per_hour": scope.max_price_per_hour,
        "gpu_count": scope.gpu_count,
        "min_gpu_count": scope.min_gpu_count,
        "min_vram_gb": scope.min_vram_gb,
        "min_total_vram_gb": scope.min_total_vram_gb,
        "min_reliability": scope.min_reliability,
        "verified": scope.verified,
        "nvlink": scope.nvlink,
        "min_vcpus": scope.min_vcpus,
        "min_ram_gb": scope.min_ram_gb,
        "min_disk_gb": scope.min_disk_gb,
        "include_unavailable": scope.include_unavailable,
        "countries": locator.check_countries(scope.countries),
        "continent": locator.check_continent(scope.continent),
        "jurisdiction": scope.jurisdiction,
        "gpu_figures": gpu_figures(cat),
    }
    return OfferFilters(**{**values, **view})


def scope_fields(names: Iterable[str]) -> dict[str, tuple[Any, FieldInfo]]:
    """Field definitions of `OfferScope` for `pydantic.create_model`: a front end's own model
    (an API query or body model) built from the same declarations."""
    fields = OfferScope.model_fields
    return {name: (fields[name].annotation, fields[name]) for name in names}


def front_end_model(model: type[BaseModel], honoured: Collection[str], name: str) -> type[Any]:
    """`model` (an `OfferScope` or a subclass) without the scope fields a front end does not
    honour: its API query or body model, with the same checks. Other fields are refused
    (`extra="forbid"`); turn an instance back with `model.model_validate(instance.model_dump())`.
    """
    dropped = ALL_SCOPE - set(honoured)
    fields = {n: (f.annotation, f) for n, f in model.model_fields.items() if n not in dropped}
    validators: dict[str, Any] = {}
    lists = [n for n in ("providers", "countries") if n in fields]
    if lists:
        validators["split_lists"] = field_validator(*lists, mode="before")(_split_values)
    if "jurisdiction" in fields:
        validators["lower_jurisdiction"] = field_validator("jurisdiction", mode="before")(
            _lower_value
        )
    if "gpu" in fields and "gpu_count" in fields:
        validators["gpu_shorthand"] = model_validator(mode="before")(_gpu_shorthand)
    elif "gpu" in fields:  # checked here, as `model` will read it: a bad one is this model's error
        validators["gpu_shorthand"] = model_validator(mode="before")(_gpu_shorthand_checked)
    return create_model(  # type: ignore[call-overload,no-any-return]
        name,
        __config__=model.model_config,
        __doc__=model.__doc__,
        __validators__=validators,
        **fields,
    )
