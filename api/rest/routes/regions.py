from __future__ import annotations

from fastapi import APIRouter

from api.rest.deps import WarehouseDep
from api.rest.parameters import NO_QUERY
from api.rest.schemas import RegionOut, RegionsPage
from pipeline.market.regions import known_regions

router = APIRouter(tags=["regions"])


@router.get(
    "/regions",
    response_model=RegionsPage,
    summary="Known locations per provider",
    dependencies=[NO_QUERY],
)
def list_regions(warehouse: WarehouseDep) -> RegionsPage:
    """Each provider location with its country, continent and EEA/EU membership, and why."""
    regions = [RegionOut.model_validate(row) for row in known_regions(warehouse)]
    return RegionsPage(regions=regions, count=len(regions))
