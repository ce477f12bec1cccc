"""The answer of `POST /collections`; `gpuprices collect` prints its summary from it too."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from pipeline.collection.runs import Collected

__all__ = ["CollectionOut", "RejectOut", "RunOut", "collection_out"]


class RejectOut(BaseModel):
    record_id: str | None
    reason: str


class RunOut(BaseModel):
    provider: str
    run_id: str
    status: Literal["ok", "failed"]
    offer_count: int
    reject_count: int
    error: str | None = Field(description="Why the run failed, in words")
    seconds: float
    observed_at: datetime
    rejects: list[RejectOut] = Field(description="Each record that could not become an offer")


class CollectionOut(BaseModel):
    runs: list[RunOut]
    fired: int = Field(description="Webhook events the alert rules queued")


def collection_out(collected: Collected) -> CollectionOut:
    """The run reports as they are: `RunOut` names each field as `RunReport` does."""
    runs = [RunOut.model_validate(r, from_attributes=True) for r in collected.reports]
    return CollectionOut(runs=runs, fired=len(collected.fired))
