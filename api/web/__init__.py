"""The web page: templates, static files and the view helpers behind `GET /`."""

from __future__ import annotations

import functools
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from api.web import query as _query
from api.web.gpu_view import GPU_SORTS
from api.web.offers_view import COLUMNS, age_words, duration_words, gpu_label
from api.web.page import PageData, page_data
from api.web.query import PageQuery

__all__ = [
    "STATIC_DIR",
    "TEMPLATES_DIR",
    "PageData",
    "PageQuery",
    "mount_static",
    "page_data",
    "templates",
    "usd",
]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


@functools.cache
def templates() -> Jinja2Templates:
    """The page's Jinja2 environment, built on first use (autoescaping `.html`)."""
    result = Jinja2Templates(directory=TEMPLATES_DIR)
    result.env.filters.update(ago=age_words, duration=duration_words, usd=usd, gpu_label=gpu_label)
    result.env.globals.update(
        columns=COLUMNS,
        filter_fields=_query.FILTER_FIELDS,
        node_fields=_query.NODE_FIELDS,
        table_fields=_query.TABLE_FIELDS,
        chart_fields=_query.CHART_FIELDS,
        workload_fields=_query.WORKLOAD_FIELDS,
        intervals=_query.INTERVALS,
        gpu_sorts=GPU_SORTS,
        default_workload=_query.WorkloadForm(),
    )
    return result


def usd(value: float | None) -> str:
    """`$2.49`, `$1,234.50`; three decimals under ten cents (`$0.045`)."""
    if value is None:
        return "—"
    return f"${value:,.3f}" if abs(value) < 0.1 else f"${value:,.2f}"


def mount_static(app: FastAPI) -> None:
    """Serve `api/static/` (stylesheet, script, icon) at `/static`: nothing comes from a CDN."""
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
