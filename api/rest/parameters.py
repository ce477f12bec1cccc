"""Bounds and parameters the routes share beyond the filter scope (`pipeline.market.scope`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import StringConstraints

from pipeline.market.scope import MAX_NAME_CHARS, MAX_NAMES
from pipeline.timeparse import Duration

__all__ = ["MAX_NAME_CHARS", "MAX_OFFERS_PAGE", "MaxAgeParam", "Name", "Names"]

MAX_OFFERS_PAGE = 10_000
"""Most offers one JSON page of `/offers` holds; exports and NDJSON are not capped."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Names = Annotated[list[Name], Query(max_length=MAX_NAMES)]
MaxAgeParam = Annotated[
    Duration | None,
    Query(description="Leave out providers whose snapshot is older: 30m, 2h, PT2H (max 10 years)"),
]
