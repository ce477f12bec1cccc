from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from api.rest.deps import ClockDep, SettingsDep, WarehouseDep
from api.rest.parameters import NO_QUERY
from pipeline.market.metrics import PriceCollector

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics",
    summary="Prometheus metrics: lowest prices, offer counts, collector health",
    dependencies=[NO_QUERY],
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text exposition format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def metrics(warehouse: WarehouseDep, settings: SettingsDep, clock: ClockDep) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PriceCollector(warehouse, settings, clock))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
