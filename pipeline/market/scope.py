"""Which offers: the one filter scope every front end shares.

`OfferScope` has one field per filter declared in `warehouse.filters.FILTERS` (name, alias,
type, bounds, description); the filters that need a lookup (a GPU name to ids, providers,
countries, a continent) or a type of the pipeline's keep one resolver each (`_RESOLVERS`).
`resolve` turns a scope into the warehouse's `OfferFilters`.
Offers, exports, history, quotes, alerts, the CLI and the web page all take it. A front end that
honours only some fields names them (`HISTORY_SCOPE`, ...): its API model and CLI options are
built from those fields (`scope_fields`), so any other field is a 422 or a usage error.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
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
from warehouse.filters import FILTERS, MAX_GPUS

__all__ = [
    "ALL_SCOPE",
    "MAX_NAME_CHARS",
    "MAX_NAMES",
    "MORE_FLAGS",
    "NODE_SCOPE",
    "Name",
    "OfferScope",
    "Vendor",
    "PLACE_SCOPE",
    "front_end_model",
    "resolve",
    "scope_fields",
    "split_names",
]

Vendor = Literal["nvidia", "amd", "intel"]
"""Who makes a GPU, as the `vendor` filter takes it (any case); the catalog's `vendor` column."""
MAX_NAMES = 50
"""Most values of a list filter (providers, countries)."""
MAX_NAME_CHARS = 200
"""Longest GPU, provider, region or place name accepted (the longest real one is ~60)."""
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
"""A GPU, model, provider, region or place name as accepted anywhere: 1 to 200 characters."""


def split_names(values: Any) -> tuple[str, ...]:
    """`["a,b", "c"]` or `"a,b"` -> `("a", "b", "c")`: repeated or comma-separated values."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list | tuple | set | frozenset):  # a JSON number or boolean
        raise ValueError("give names as text or a list of texts")
    return tuple(n.strip() for v in values for n in str(v).split(",") if n.strip())


def _lower_value(value: Any) -> Any:
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
    if str(given).strip().isdigit() and int(str(given)) != int(count):
        raise ValueError(f"gpu={data['gpu']!r} says {int(count)} GPUs but gpu_count says {given}")
    return {**data, "gpu": name.strip(), "gpu_count": int(count)}


def _gpu_shorthand_checked(cls: type, data: Any) -> Any:
    """`_gpu_shorthand`'s checks for a model without `gpu_count`: the data unchanged, so the
    full model reads the count (and says whether its front end honours one)."""
    _gpu_shorthand(cls, data)
    return data


@dataclass(frozen=True, slots=True)
class _Resolver:
    """How a filter that needs a lookup is resolved (the value `OfferFilters` takes, from the
    given one and the catalog), and its scope field's extra settings (its type and default are
    the field's declaration in `OfferScope`)."""

    resolve: Callable[[Any, Catalog], Any]
    settings: dict[str, Any] = dataclass_field(default_factory=dict)


def _providers(names: tuple[str, ...], _catalog: Catalog) -> frozenset[str] | None:
    for name in names:
        provider_module(name)  # an unknown provider raises, naming the known ones
    return frozenset(names) or None


def _text(value: Any, _catalog: Catalog) -> str | None:
    return str(value) if value else None


_RESOLVERS: dict[str, _Resolver] = {
    "gpus": _Resolver(
        lambda name, cat: cat.ids_for_query(name) if name else None,
        settings={"examples": ["A100-80GB"]},
    ),
    "providers": _Resolver(_providers),
    "sellers": _Resolver(lambda names, _cat: frozenset(n.lower() for n in names) or None),
    "pricing": _Resolver(_text),
    "form_factor": _Resolver(_text),
    "vendor": _Resolver(_text),
    "countries": _Resolver(lambda codes, _cat: get_locator().check_countries(codes)),
    "continent": _Resolver(lambda name, _cat: get_locator().check_continent(name)),
    "jurisdiction": _Resolver(lambda value, _cat: value),
}
"""The filters whose value needs a lookup or a type of the pipeline's, one resolver each."""

_FILTER_BY_FIELD = {f.field: f for f in FILTERS}


def _field_kwargs(name: str) -> dict[str, Any]:
    """`Field(...)` arguments of the scope field `name` from its `FILTERS` row: its description,
    alias and bounds (or its resolver's settings), declared once there. The default stays beside
    the field's type in `OfferScope`, where a type checker reads both."""
    f = _FILTER_BY_FIELD[name]
    kwargs: dict[str, Any] = {"description": f.description}
    if f.alias:
        kwargs["alias"] = f.alias
    if f.resolved:
        return {**kwargs, **_RESOLVERS[f.name].settings}
    if f.ge is not None or f.le is not None:
        kwargs |= {"ge": f.ge, "le": f.le}
    return kwargs


def _declared(name: str) -> FieldInfo:
    """The field information of the scope field `name`, from its `FILTERS` row."""
    declared: FieldInfo = Field(**_field_kwargs(name))
    return declared


Names = Annotated[tuple[str, ...], Field(max_length=MAX_NAMES), BeforeValidator(split_names)]
"""Up to 50 names, given repeated or comma-separated (`provider=a&provider=b`, `provider=a,b`);
the bound before the validator, so the JSON schema says `maxItems`."""
Vendors = Annotated[Vendor | None, BeforeValidator(_lower_value)]
Jurisdiction = Annotated[Literal["eea", "eu"] | None, BeforeValidator(_lower_value)]
"""eea or eu, any case."""


class OfferScope(BaseModel):
    """Which offers: one field per declared filter (`warehouse.filters.FILTERS`, which gives
    each its description, alias and bounds). Field names are the pipeline's; aliases
    are the API's and the CLI's. A new filter is a row there and a typed field here (a test
    checks that both list the same names)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )

    gpu: Annotated[Name | None, _declared("gpu")] = None
    providers: Annotated[Names, _declared("providers")] = ()
    sellers: Annotated[Names, _declared("sellers")] = ()
    pricing: Annotated[Pricing | None, _declared("pricing")] = None
    region: Annotated[Name | None, _declared("region")] = None
    form_factor: Annotated[FormFactor | None, _declared("form_factor")] = None
    vendor: Annotated[Vendors, _declared("vendor")] = None
    countries: Annotated[Names, _declared("countries")] = ()
    continent: Annotated[Name | None, _declared("continent")] = None
    jurisdiction: Annotated[Jurisdiction, _declared("jurisdiction")] = None
    max_price_per_gpu_hour: Annotated[float | None, _declared("max_price_per_gpu_hour")] = None
    max_price_per_hour: Annotated[float | None, _declared("max_price_per_hour")] = None
    gpu_count: Annotated[int | None, _declared("gpu_count")] = None
    min_gpu_count: Annotated[int | None, _declared("min_gpu_count")] = None
    min_vram_gb: Annotated[float | None, _declared("min_vram_gb")] = None
    min_total_vram_gb: Annotated[float | None, _declared("min_total_vram_gb")] = None
    min_reliability: Annotated[float | None, _declared("min_reliability")] = None
    verified: Annotated[bool, _declared("verified")] = False
    nvlink: Annotated[bool, _declared("nvlink")] = False
    min_vcpus: Annotated[float | None, _declared("min_vcpus")] = None
    min_ram_gb: Annotated[float | None, _declared("min_ram_gb")] = None
    min_disk_gb: Annotated[float | None, _declared("min_disk_gb")] = None
    include_unavailable: Annotated[bool, _declared("include_unavailable")] = False

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
NODE_SCOPE = frozenset(f.field for f in FILTERS if f.node)
"""Bounds on one offer (its node, its price): what a front end over single offers can honour."""
MORE_FLAGS = {f.field: f.more_flags for f in FILTERS if f.more_flags}
"""The CLI's short or older spellings of some fields, beside the flag made from the field."""


def resolve(scope: Any, catalog: Catalog | None = None, **view: Any) -> OfferFilters:
    """The warehouse filters for `scope` (an `OfferScope`: an unknown GPU, provider, country or
    continent raises); `view` adds `sort`, `limit`, `as_of` or `include_unavailable`."""
    cat = catalog or get_catalog()
    values = {
        f.name: _RESOLVERS[f.name].resolve(value, cat) if f.resolved else value
        for f in FILTERS
        if (value := getattr(scope, f.field)) is not None
    }
    return OfferFilters(**{**values, "gpu_figures": gpu_figures(cat), **view})


def scope_fields(names: Iterable[str]) -> dict[str, tuple[Any, FieldInfo]]:
    """Field definitions of `OfferScope` for `pydantic.create_model`: a front end's own model
    (an API query or body model) built from the same declarations."""
    fields = OfferScope.model_fields
    return {name: (fields[name].annotation, fields[name]) for name in names}


def front_end_model(
    model: type[BaseModel],
    honoured: Collection[str],
    name: str,
    validators: Mapping[str, Any] | None = None,
) -> type[BaseModel]:
    """`model` (an `OfferScope` or a subclass) without the scope fields a front end does not
    honour: its API query or body model, with the same checks (and `validators` besides).
    Other fields are refused (`extra="forbid"`); turn an instance back with
    `model.model_validate(instance.model_dump())`.
    """
    dropped = ALL_SCOPE - set(honoured)
    fields: dict[str, Any] = {
        n: (f.annotation, f) for n, f in model.model_fields.items() if n not in dropped
    }
    checks: dict[str, Any] = dict(validators or {})
    if "gpu" in fields and "gpu_count" in fields:
        checks["gpu_shorthand"] = model_validator(mode="before")(_gpu_shorthand)
    elif "gpu" in fields:  # checked here, as `model` will read it: a bad one is this model's error
        checks["gpu_shorthand"] = model_validator(mode="before")(_gpu_shorthand_checked)
    made: type[BaseModel] = create_model(
        name,
        __config__=model.model_config,
        __doc__=model.__doc__,
        __validators__=checks,
        **fields,
    )
    return made
