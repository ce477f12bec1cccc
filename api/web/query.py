"""What the page was asked for, read from its query string, and links that change one thing.

Every control on the page is a plain GET form or link, so the whole state lives in the URL: the
page works without JavaScript, and a view can be bookmarked or shared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import ValidationError

from api.web.gpu_view import GPU_SORTS, GpuSort
from api.web.offers_view import SORT_KEYS, View
from pipeline.market.scope import NODE_SCOPE, OfferScope

__all__ = [
    "CHART_FIELDS",
    "FILTER_FIELDS",
    "INTERVALS",
    "NODE_FIELDS",
    "TABLE_FIELDS",
    "WORKLOAD_FIELDS",
    "PageQuery",
    "WorkloadForm",
]

INTERVALS = ("1h", "1d", "1w")
"""Bucket sizes the chart offers (the API also has 6h)."""
PRICINGS = ("on_demand", "spot")
METHODS = ("qlora", "lora", "full")
Order = Literal["asc", "desc"]

NODE_FIELDS: tuple[tuple[str, str, bool], ...] = tuple(
    (field.alias or name, field.description or name, field.annotation is bool)
    for name, field in OfferScope.model_fields.items()
    if name in NODE_SCOPE
)
"""The node filters the page's form shows: (query name, label, whether a checkbox), from the
scope's own fields; `PageQuery.node` keeps what was typed and the scope checks it."""
_NODE_NAMES = frozenset(name for name, _, _ in NODE_FIELDS)
FILTER_FIELDS = ("gpu", "provider", "pricing", "include_unavailable", *sorted(_NODE_NAMES))
TABLE_FIELDS = ("gpu_sort", "view", "sort", "order")
CHART_FIELDS = ("interval",)
WORKLOAD_FIELDS = ("model", "method", "tokens", "seq_len", "include_spot")
"""Which form sends which fields: each form carries the others' as hidden inputs."""


@dataclass(frozen=True, slots=True)
class WorkloadForm:
    """The workload form as typed; `pipeline.workload.model` checks the values when quoting."""

    model: str = "Llama-3.1-8B"
    method: str = "qlora"
    tokens: str = "50M"
    seq_len: str = "2048"
    include_spot: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> WorkloadForm:
        default = cls()
        return cls(
            model=_text(params, "model") or default.model,
            method=_text(params, "method") or default.method,
            tokens=_text(params, "tokens") or default.tokens,
            seq_len=_text(params, "seq_len") or default.seq_len,
            include_spot=_flag(params, "include_spot"),
        )


@dataclass(frozen=True, slots=True)
class PageQuery:
    gpu: str | None = None
    provider: str | None = None
    pricing: str | None = None
    include_unavailable: bool = False
    node: tuple[tuple[str, str], ...] = ()
    """Node filters as typed (`min_vram_gb=80`), checked by the scope when the offers are read."""
    gpu_sort: GpuSort = "price"
    """Order of the first view, one row per GPU."""
    view: View = "cheapest"
    sort: str = "price_per_gpu_hour"
    order: Order = "asc"
    interval: str = "1h"
    workload: WorkloadForm | None = None
    """None until the workload form is sent."""
    problems: tuple[str, ...] = ()
    """Values that made no sense and were replaced by the default."""

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> PageQuery:
        problems: list[str] = []

        def choice(name: str, allowed: tuple[str, ...] | frozenset[str], default: Any) -> Any:
            value = _text(params, name)
            if value is None:
                return default
            if value not in allowed:
                problems.append(f"{name} must be one of {', '.join(sorted(allowed))}")
                return default
            return value

        sort = _text(params, "sort") or ""
        descending = sort.startswith("-")  # sort=-reliability, as the API takes it
        node = {
            name: "1" if checkbox else value
            for name, _, checkbox in NODE_FIELDS
            if (value := _text(params, name)) is not None and (not checkbox or _flag(params, name))
        }
        gpu = _text(params, "gpu")
        return cls(
            gpu=_gpu_shorthand(gpu, node),
            provider=_text(params, "provider"),
            pricing=choice("pricing", PRICINGS, None),
            include_unavailable=_flag(params, "include_unavailable"),
            node=tuple(node.items()),
            gpu_sort=choice("gpu_sort", tuple(GPU_SORTS), "price"),
            view=choice("view", ("cheapest", "all"), "cheapest"),
            sort=choice("sort", SORT_KEYS, "price_per_gpu_hour")
            if not descending
            else _choose(sort[1:], SORT_KEYS, "price_per_gpu_hour", problems),
            order="desc" if descending else choice("order", ("asc", "desc"), "asc"),
            interval=choice("interval", INTERVALS, "1h"),
            workload=WorkloadForm.from_params(params) if "method" in params else None,
            problems=tuple(problems),
        )

    def params(self, **changes: Any) -> list[tuple[str, str]]:
        """The query string of this page with `changes`, leaving out defaults."""
        query = dataclasses.replace(self, **changes) if changes else self
        default = PageQuery()
        pairs = [
            (f.name, value)
            for f in dataclasses.fields(PageQuery)
            if f.name not in ("workload", "problems", "node")
            and (value := getattr(query, f.name)) != getattr(default, f.name)
        ]
        pairs += list(query.node)
        if query.workload is not None:
            form = query.workload
            pairs += [(f.name, getattr(form, f.name)) for f in dataclasses.fields(WorkloadForm)]
        return [(k, "1" if v is True else str(v)) for k, v in pairs if v is not False]

    def url(self, fragment: str = "", **changes: Any) -> str:
        """`?...` for this page with `changes`, e.g. `q.url(sort="gpu", order="desc")`.

        Relative to the page, so links keep working behind a proxy that mounts it under a prefix.
        """
        base = f"?{urlencode(self.params(**changes))}"
        return f"{base}#{fragment}" if fragment else base

    def hidden_fields(self, *names: str) -> list[tuple[str, str]]:
        """Current values of `names`, for the hidden inputs of a form that changes other things."""
        return [(name, value) for name, value in self.params() if name in names]


def _gpu_shorthand(gpu: str | None, node: dict[str, str]) -> str | None:
    """`gpu=H100:8` as the GPU (H100) and the GPU count field (8), as the scope reads it; a
    shorthand the scope refuses is left as typed, for the scope to say why."""
    if gpu is None or ":" not in gpu:
        return gpu
    try:
        scope = OfferScope.model_validate({"gpu": gpu, **node})
    except ValidationError:
        return gpu
    node["gpu_count"] = str(scope.gpu_count)
    return scope.gpu


def _choose(value: str, allowed: frozenset[str], default: str, problems: list[str]) -> str:
    if value in allowed:
        return value
    problems.append(f"sort must be one of {', '.join(sorted(allowed))}")
    return default


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    return value.strip() or None if value is not None else None


def _flag(params: Mapping[str, str], name: str) -> bool:
    return (params.get(name) or "").lower() in ("1", "on", "true", "yes")
