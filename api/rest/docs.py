"""`/docs` (Swagger UI) and `/redoc` that work offline: their scripts and styles are served from
this process (the files the `fastapi-offline` package ships), never loaded from a CDN."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_ASSETS", "install_offline_docs"]

DOCS_ASSETS = "/static/docs"
"""Where the Swagger UI and ReDoc files are served."""
_FILES = Path(fastapi_offline.__file__).parent / "static"


def install_offline_docs(app: FastAPI) -> None:
    """Give `app` (made with `docs_url=None, redoc_url=None`) local `/docs` and `/redoc`."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=_FILES), name="docs-assets")

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", ""))

    @app.get("/docs", include_in_schema=False)
    def swagger(request: Request) -> HTMLResponse:
        root = base(request)
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - API docs",
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}/static/favicon.svg",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = base(request)
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}/static/favicon.svg",
            with_google_fonts=False,
        )
