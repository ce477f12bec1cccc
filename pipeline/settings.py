"""Settings from `GPUPRICES_*` environment variables, built at start-up, never at import."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DEFAULT_DB", "Settings"]

DEFAULT_DB = Path("data/gpuprices.duckdb")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPUPRICES_", extra="ignore")

    db: Path = Field(default=DEFAULT_DB, description="DuckDB file (GPUPRICES_DB)")
    host: str = Field(default="127.0.0.1", description="Address `serve` listens on")
    port: int = Field(default=8000, ge=1, le=65535, description="Port `serve` listens on")
