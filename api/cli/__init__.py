"""The `gpuprices` command line: thin commands over the pipeline functions the API calls."""

from __future__ import annotations

from api.cli.commands import app, main

__all__ = ["app", "main"]
