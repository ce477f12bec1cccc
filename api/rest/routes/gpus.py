from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query

from api.rest.deps import WarehouseDep
from api.rest.parameters import MAX_NAME_CHARS
from api.rest.schemas import GpuOut, GpusPage, ResolveOut, UnknownGpuOut, UnknownGpusPage
from pipeline.market.offers import gpu_specs, resolve_gpu, unknown_gpus

router = APIRouter(prefix="/gpus", tags=["gpus"])


@router.get("", response_model=GpusPage, summary="The GPU catalog")
def list_gpus() -> GpusPage:
    gpus = [GpuOut.model_validate(asdict(spec)) for spec in gpu_specs()]
    return GpusPage(gpus=gpus, count=len(gpus))


@router.get("/resolve", response_model=ResolveOut, summary="How a GPU name resolves")
def resolve(
    name: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_NAME_CHARS,
            description="Any spelling, e.g. A100 SXM4 80GB",
            examples=["A100 SXM4 80GB"],
        ),
    ],
    vram_gb: Annotated[
        float | None,
        Query(gt=0, le=1024, description="GPU memory the provider reports per GPU, GB"),
    ] = None,
) -> ResolveOut:
    resolution, matches = resolve_gpu(name, vram_gb=vram_gb)
    return ResolveOut(
        name=name,
        gpu=resolution.gpu,
        form_factor=resolution.form_factor,
        vram_gb=resolution.vram_gb,
        matches=sorted(matches),
    )


@router.get("/unknown", response_model=UnknownGpusPage, summary="GPU names the catalog lacks")
def list_unknown(warehouse: WarehouseDep) -> UnknownGpusPage:
    gpus = [UnknownGpuOut.model_validate(row) for row in unknown_gpus(warehouse)]
    return UnknownGpusPage(gpus=gpus, count=len(gpus))
