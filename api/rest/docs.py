"""`/docs` (Swagger UI) and `/redoc` that work offline: their scripts and styles are served from
this process (the files the `fastapi-offline` package ships), never loaded from a CDN."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_ASSETS", "install_offline_docs"]

DOCS_ASSETS = "/static/docs"
"""Where the Swagger UI and ReDoc files are served."""
_FILES = Path(fastapi_offline.__file__).parent / "static"
_FAVICON = "/static/favicon.svg"
_ASSETS = {
    "swagger_js_url": f"{DOCS_ASSETS}/swagger-ui-bundle.js",
    "swagger_css_url": f"{DOCS_ASSETS}/swagger-ui.css",
    "swagger_favicon_url": _FAVICON,
    "redoc_js_url": f"{DOCS_ASSETS}/redoc.standalone.js",
    "redoc_favicon_url": _FAVICON,
}
"""Each page's script, style and icon, named as FastAPI's page builders take them."""


def install_offline_docs(app: FastAPI) -> None:
    """Give `app` (made with `docs_url=None, redoc_url=None`) local `/docs` and `/redoc`."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=_FILES), name="docs-assets")

    def page(
        request: Request, render: Callable[..., HTMLResponse], title: str, kind: str, **options: Any
    ) -> HTMLResponse:
        """One docs page: its `_ASSETS` (those named `kind`_...) below the app's `root_path`."""
        root = str(request.scope.get("root_path", ""))
        assets = {name: f"{root}{path}" for name, path in _ASSETS.items() if name.startswith(kind)}
        return render(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - {title}",
            **assets,
            **options,
        )

    @app.get("/docs", include_in_schema=False)
    def swagger(request: Request) -> HTMLResponse:
        return page(request, get_swagger_ui_html, "API docs", "swagger_")

    @app.get("/redoc", include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        return page(request, get_redoc_html, "ReDoc", "redoc_", with_google_fonts=False)
