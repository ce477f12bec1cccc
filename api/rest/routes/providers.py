from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from api.rest.deps import FreshnessDep, SettingsDep, WarehouseDep
from api.rest.parameters import MAX_NAME_CHARS, NO_QUERY, QueryModel
from api.rest.schemas import ProviderHealthOut, ProvidersPage, QualityPage
from pipeline.market.offers import quality_report
from pipeline.market.quality import provider_health, quality_overview
from pipeline.timeparse import UtcDateTime

router = APIRouter(tags=["providers"])


@router.get(
    "/providers",
    response_model=ProvidersPage,
    summary="Collection health per provider",
    dependencies=[NO_QUERY],
)
def list_providers(
    freshness: FreshnessDep, settings: SettingsDep, warehouse: WarehouseDep
) -> ProvidersPage:
    """Last run, last success, status, offers in the snapshot served, last error, next run, and
    the quality of the newest run (health, resolved share, unknown GPU names, drift); `demo` when
    the data is the recorded demo (`gpuprices demo`)."""
    health = provider_health(warehouse)  # its observed_at and offer_count give way to f's
    return ProvidersPage(
        providers=[
            ProviderHealthOut.model_validate({**health.get(f.provider, {}), **asdict(f)})
            for f in freshness
        ],
        demo=settings.demo,
    )


class QualityQuery(QueryModel):
    """The query of `GET /quality`: which provider, since when, how many records."""

    provider: str | None = Field(None, max_length=MAX_NAME_CHARS, description="Only this provider")
    since: UtcDateTime | None = Field(
        None, description="Runs observed at or after this time, ISO 8601 (default: the last 50)"
    )
    limit: int = Field(100, ge=1, le=1000, description="Most records to return")


@router.get(
    "/quality",
    response_model=QualityPage,
    summary="Provider quality per run, unknown GPU names, flagged prices, quarantined records",
)
def quality(warehouse: WarehouseDep, query: Annotated[QualityQuery, Query()]) -> QualityPage:
    """Per provider: the health of its newest run (degraded, and why), its resolved share,
    rejects by reason, unknown GPU spellings with an example offer, the answer's drift and the
    price outliers of its snapshot by `offer_id`, with its runs since `since`; then the
    quarantined records with the raw record and reason."""
    return QualityPage.model_validate(
        {
            "providers": quality_overview(warehouse, query.provider, query.since),
            **quality_report(warehouse, query.provider, query.limit),
        }
    )
