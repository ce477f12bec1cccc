from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.rest.deps import FreshnessDep, SettingsDep, WarehouseDep
from api.rest.parameters import MAX_NAME_CHARS
from api.rest.schemas import ProviderFreshnessOut, ProvidersPage, QualityPage
from pipeline.market.offers import quality_report

router = APIRouter(tags=["providers"])


@router.get("/providers", response_model=ProvidersPage, summary="Collection health per provider")
def list_providers(freshness: FreshnessDep, settings: SettingsDep) -> ProvidersPage:
    """Last run, last success, status, offers in the snapshot served, last error, next run;
    `demo` when the data is the recorded demo (`gpuprices demo`)."""
    return ProvidersPage(
        providers=[ProviderFreshnessOut.model_validate(f) for f in freshness], demo=settings.demo
    )


@router.get("/quality", response_model=QualityPage, summary="Quarantined provider records")
def quality(
    warehouse: WarehouseDep,
    provider: Annotated[
        str | None, Query(max_length=MAX_NAME_CHARS, description="Only this provider")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most records to return")] = 100,
) -> QualityPage:
    """Records that could not be parsed or broke an invariant, with the raw record and reason."""
    return QualityPage.model_validate(quality_report(warehouse, provider, limit))
