"""What an alert watches: its kind, the offers in its scope, and its threshold."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

import orjson

from pipeline.market.scope import PLACE_SCOPE, OfferScope

__all__ = ["ALERT_SCOPE", "AlertKind", "Condition"]


class AlertKind(StrEnum):
    PRICE = "price"
    AVAILABILITY = "availability"
    WORKLOAD = "workload"
    INDEX = "index"
    PROVIDER_HEALTH = "provider_health"


ALERT_SCOPE = PLACE_SCOPE | {"min_gpu_count"}
"""The offers an alert watches: the GPU, who sells it, pricing, place and node size."""


@dataclass(frozen=True, slots=True)
class Condition:
    kind: AlertKind
    scope: OfferScope = OfferScope()
    """Which offers (`ALERT_SCOPE` fields); an unknown country never matches a place filter."""
    below_price_per_gpu_hour: float | None = None
    below_cost_usd: float | None = None
    workload: Mapping[str, Any] | None = None
    """The saved workload (the body `POST /quotes` takes), for `workload` rules."""
    index_change_percent: float | None = None
    """`index` rules: fire when the hourly index moved this much (negative: a drop) ..."""
    within: timedelta | None = None
    """... against its value this long before."""

    @classmethod
    def of(
        cls,
        kind: AlertKind,
        *,
        below_price_per_gpu_hour: float | None = None,
        below_cost_usd: float | None = None,
        workload: Mapping[str, Any] | None = None,
        index_change_percent: float | None = None,
        within: timedelta | None = None,
        **scope: Any,
    ) -> Condition:
        """A condition with its scope given field by field (`gpu=`, `providers=`, ...)."""
        return cls(
            kind,
            OfferScope(**scope),
            below_price_per_gpu_hour,
            below_cost_usd,
            workload,
            index_change_percent,
            within,
        )

    @property
    def threshold(self) -> float | None:
        if self.kind is AlertKind.PRICE:
            return self.below_price_per_gpu_hour
        if self.kind is AlertKind.WORKLOAD:
            return self.below_cost_usd
        if self.kind is AlertKind.INDEX:
            return self.index_change_percent
        return None

    def to_json(self) -> str:
        """Stored flat: the kind, the scope's fields by their pipeline names, the thresholds."""
        data = {
            "kind": str(self.kind),
            **self.scope.model_dump(mode="json", include=set(ALERT_SCOPE)),
            "below_price_per_gpu_hour": self.below_price_per_gpu_hour,
            "below_cost_usd": self.below_cost_usd,
            "workload": dict(self.workload) if self.workload is not None else None,
            "index_change_percent": self.index_change_percent,
            "within_seconds": self.within.total_seconds() if self.within is not None else None,
        }
        return orjson.dumps(data).decode()

    @classmethod
    def from_json(cls, text: str) -> Condition:
        data = orjson.loads(text)
        scope = {k: v for k, v in data.items() if k in ALERT_SCOPE and v is not None}
        return cls(
            kind=AlertKind(data["kind"]),
            scope=OfferScope.model_validate(scope),
            below_price_per_gpu_hour=data.get("below_price_per_gpu_hour"),
            below_cost_usd=data.get("below_cost_usd"),
            workload=data.get("workload"),
            index_change_percent=data.get("index_change_percent"),
            within=timedelta(seconds=data["within_seconds"])
            if data.get("within_seconds")
            else None,
        )
