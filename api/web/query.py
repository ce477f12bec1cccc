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

from api.web.gpu_view import GPU_SORTS, GpuSort
from api.web.offers_view import SORT_KEYS, View

__all__ = [
    "CHART_FIELDS",
    "FILTER_FIELDS",
    "INTERVALS",
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

FILTER_FIELDS = ("gpu", "provider", "pricing", "include_unavailable")
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
    gpu_sort: GpuSort = "vram"
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

        return cls(
            gpu=_text(params, "gpu"),
            provider=_text(params, "provider"),
            pricing=choice("pricing", PRICINGS, None),
            include_unavailable=_flag(params, "include_unavailable"),
            gpu_sort=choice("gpu_sort", tuple(GPU_SORTS), "vram"),
            view=choice("view", ("cheapest", "all"), "cheapest"),
            sort=choice("sort", SORT_KEYS, "price_per_gpu_hour"),
            order=choice("order", ("asc", "desc"), "asc"),
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
            if f.name not in ("workload", "problems")
            and (value := getattr(query, f.name)) != getattr(default, f.name)
        ]
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


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    return value.strip() or None if value is not None else None


def _flag(params: Mapping[str, str], name: str) -> bool:
    return (params.get(name) or "").lower() in ("1", "on", "true", "yes")
