from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from api.rest.deps import WarehouseDep
from api.rest.parameters import MAX_NAME_CHARS, NO_QUERY, QueryModel
from api.rest.schemas import GpuOut, GpusPage, ResolveOut, UnknownGpuOut, UnknownGpusPage
from pipeline.market.offers import gpu_specs, resolve_gpu, unknown_gpus

router = APIRouter(prefix="/gpus", tags=["gpus"])


@router.get("", response_model=GpusPage, summary="The GPU catalog", dependencies=[NO_QUERY])
def list_gpus() -> GpusPage:
    gpus = [GpuOut.model_validate(asdict(spec)) for spec in gpu_specs()]
    return GpusPage(gpus=gpus, count=len(gpus))


class ResolveQuery(QueryModel):
    """The query of `GET /gpus/resolve`: a provider's spelling and memory."""

    name: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="Any spelling, e.g. A100 SXM4 80GB",
        examples=["A100 SXM4 80GB"],
    )
    vram_gb: float | None = Field(
        None, gt=0, le=1024, description="GPU memory the provider reports per GPU, GB"
    )


@router.get("/resolve", response_model=ResolveOut, summary="How a GPU name resolves")
def resolve(query: Annotated[ResolveQuery, Query()]) -> ResolveOut:
    resolution, matches = resolve_gpu(query.name, vram_gb=query.vram_gb)
    return ResolveOut(name=query.name, **asdict(resolution), matches=sorted(matches))


@router.get(
    "/unknown",
    response_model=UnknownGpusPage,
    summary="GPU names the catalog lacks",
    dependencies=[NO_QUERY],
)
def list_unknown(warehouse: WarehouseDep) -> UnknownGpusPage:
    gpus = [UnknownGpuOut.model_validate(row) for row in unknown_gpus(warehouse)]
    return UnknownGpusPage(gpus=gpus, count=len(gpus))
