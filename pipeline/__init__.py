"""The GPU catalog, collection runs and the queries the CLI and API share."""

from __future__ import annotations

from pipeline.catalog import Catalog, GpuSpec, Resolution, get_catalog
from pipeline.collection.collect import RunReport, run_collection
from pipeline.errors import PipelineError, UnknownGpuError, UnknownProviderError
from pipeline.market.offers import OfferQuery, current_offers
from pipeline.settings import Settings

__all__ = [
    "Catalog",
    "GpuSpec",
    "OfferQuery",
    "PipelineError",
    "Resolution",
    "RunReport",
    "Settings",
    "UnknownGpuError",
    "UnknownProviderError",
    "current_offers",
    "get_catalog",
    "run_collection",
]
