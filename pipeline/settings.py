"""Settings from `GPUPRICES_*` environment variables and an optional TOML file.

Built at start-up (`Settings.load()`), never at import. Precedence: explicit arguments, then the
environment, then the TOML file named by `--config` or `GPUPRICES_CONFIG`, then the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from pipeline.errors import PipelineError
from pipeline.timeparse import Duration, parse_duration
from scrapers import sources
from warehouse import WarehouseError
from warehouse.quality import OutlierBounds
from warehouse.target import EXPIRE_SNAPSHOTS_AFTER, Target, parse_target

__all__ = [
    "DEFAULT_DB",
    "Duration",
    "Role",
    "Settings",
    "SettingsError",
    "parse_duration",
]

DEFAULT_DB = Path("data/gpuprices.duckdb")
FALLBACK_INTERVAL = timedelta(minutes=15)
"""The interval of a name no registered module declares (a provider removed since its data was
stored)."""


class SettingsError(PipelineError):
    """A setting is missing or invalid; the message names it."""


Role = Literal["all", "api", "collector"]


@dataclass(frozen=True, slots=True)
class QualityBounds:
    """When a provider run is degraded, and which prices are outliers (pipeline/collection/
    quality.py); set through `Settings`' `quality_*` and `outlier_*` fields."""

    failed_runs: int = 3
    share_drop_points: float = 10.0
    outliers: OutlierBounds = OutlierBounds(low=0.2, high=5.0)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GPUPRICES_", extra="ignore", env_nested_delimiter="__"
    )

    db: Path = Field(default=DEFAULT_DB, description="DuckDB file")
    warehouse: str | None = Field(
        default=None,
        description="duckdb:///file.duckdb or ducklake:postgres:dbname=... (default: `db`)",
    )
    lake_data_path: str | None = Field(
        default=None,
        description="A DuckLake's data files: shared directory or s3://bucket/prefix/ (S3 "
        "client from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3, "
        "GPUPRICES_S3_URL_STYLE)",
    )
    lake_expire_snapshots_after: Duration = Field(
        default=EXPIRE_SNAPSHOTS_AFTER,
        description="A DuckLake's snapshots older than this expire at the retention pass, and "
        "the data files only they listed are deleted",
    )
    role: Role = Field(
        default="all", description="What `serve` runs: all, api (read only) or collector"
    )
    lease_ttl: Duration = Field(
        default=timedelta(seconds=60),
        description="How long a collector's lease on a provider lasts without renewal",
    )
    standby_for: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Providers this collector takes over when no other collector holds them",
    )
    replay_dir: Path | None = Field(
        default=None,
        description="Testing only: scheduled runs replay <dir>/<provider>.* instead of fetching "
        "(<provider>.url: a loopback URL that takes all its requests)",
    )
    demo: bool = Field(
        default=False,
        description="The data is the recorded demo (`gpuprices demo`): labelled so on the page "
        "and in the API",
    )
    host: str = Field(default="127.0.0.1", description="Address `serve` listens on")
    port: int = Field(default=8000, ge=1, le=65535, description="Port `serve` listens on")
    providers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(sources()), description="Providers collected (default: all)"
    )
    intervals: dict[str, Duration] = Field(
        default_factory=dict, description="Collection interval per provider (overrides defaults)"
    )
    stale_after: dict[str, Duration] = Field(
        default_factory=dict, description="Age past which a provider's snapshot is stale"
    )
    stale_intervals: float = Field(
        default=3.0, gt=0, description="Default stale threshold, in collection intervals"
    )
    jitter_s: int = Field(default=30, ge=0, description="Random delay added to each run (s)")
    scheduler: bool = Field(default=True, description="Collect on schedule inside `serve`")
    opentelemetry: bool = Field(
        default=False,
        description="FastAPI's native OpenTelemetry (request traces, metrics and logs to the "
        "globally configured providers); off, it costs nothing per request",
    )
    retention: Duration = Field(
        default=timedelta(days=90), description="Raw observations older than this are pruned"
    )
    api_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Provider keys by variable name (e.g. LAMBDA_API_KEY); the environment wins",
    )
    api_key: SecretStr | None = Field(
        default=None, min_length=1, description="Bearer key to manage alerts (reads stay open)"
    )
    allow_private_webhooks: bool = Field(
        default=False, description="Allow http and private/loopback webhook targets (local use)"
    )
    webhook_timeout_s: float = Field(
        default=10.0, gt=0, le=60, description="Timeout of one webhook delivery attempt (s)"
    )
    webhook_max_attempts: int = Field(
        default=8, ge=1, le=50, description="Attempts before a delivery is marked failed"
    )
    webhook_backoff: Duration = Field(
        default=timedelta(seconds=30), description="Wait before the first retry; doubles each time"
    )
    webhook_max_backoff: Duration = Field(
        default=timedelta(hours=1), description="Longest wait between two attempts"
    )
    webhook_poll: Duration = Field(
        default=timedelta(seconds=5), description="How often `serve` sends due deliveries"
    )
    quality_failed_runs: int = Field(
        default=3, ge=1, le=100, description="Failing this many runs in a row degrades a provider"
    )
    quality_share_drop_points: float = Field(
        default=10.0,
        gt=0,
        le=100,
        description="Degraded when the share of offers resolved to a catalog GPU falls this many "
        "percentage points below its mean over the good runs of the previous 24 h",
    )
    outlier_low_ratio: float = Field(
        default=0.2,
        gt=0,
        lt=1,
        description="An available offer below this times the median per-GPU price of its GPU and "
        "pricing (all providers) is a low outlier: flagged, held out of the current offers "
        "(offers, quotes, metrics, alerts, the index) until seen in two runs in a row",
    )
    outlier_high_ratio: float = Field(
        default=5.0,
        gt=1,
        description="Above this times the median: a high outlier (held out the same way)",
    )
    max_connections: int | None = Field(
        default=None,
        ge=8,
        le=1_000_000,
        description="Open connections `serve` keeps; a new one past it closes the longest idle "
        "(default: the open-file limit less 64, at most 4096)",
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, le=300, description="Time a connection has to send a request's headers"
    )
    keep_alive_timeout_s: int = Field(
        default=5, ge=1, le=300, description="Idle keep-alive connections are closed after this (s)"
    )
    backlog: int = Field(
        default=1024, ge=16, le=65535, description="Connections waiting to be accepted"
    )
    max_alert_rules: int = Field(
        default=500, ge=1, le=100_000, description="Most alert rules stored; more are refused"
    )
    memory_budget_mb: int = Field(
        default=1024,
        ge=256,
        le=1_048_576,
        description="Memory a serving process plans for (MB): the current offers in memory and "
        "every cache kept beside them; each cache's byte bound is a share of it",
    )

    hf_cache_dir: Path | None = Field(
        default=None,
        description="Where Hugging Face config.json files fetched for quotes are kept (default: "
        "hf_configs beside `db`); HF_ENDPOINT and HF_TOKEN are read as huggingface_hub reads them",
    )

    @field_validator("providers", "standby_for", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @model_validator(mode="after")
    def _known_providers(self) -> Self:
        known = sorted(sources())
        for name in [*self.providers, *self.standby_for, *self.intervals, *self.stale_after]:
            if name not in known:
                raise ValueError(f"unknown provider '{name}' (known: {', '.join(known)})")
        for name, interval in self.intervals.items():
            if interval <= timedelta(0):
                raise ValueError(f"intervals.{name} must be positive")
        if self.lease_ttl <= timedelta(0):
            raise ValueError("lease_ttl must be positive")
        if self.warehouse is not None:
            try:
                parse_target(self.warehouse, self.lake_data_path, self.lake_expire_snapshots_after)
            except WarehouseError as exc:
                raise ValueError(str(exc)) from None
        return self

    @property
    def warehouse_target(self) -> Target:
        """What `Warehouse.open` opens: `warehouse` when set, else the `db` file."""
        if self.warehouse is None:
            return self.db
        return parse_target(self.warehouse, self.lake_data_path, self.lake_expire_snapshots_after)

    @property
    def model_configs_dir(self) -> Path | None:
        """Where fetched config.json files are kept: `hf_cache_dir`, else beside the `db` file
        (None for an in-memory database: kept in the process only)."""
        if self.hf_cache_dir is not None:
            return self.hf_cache_dir
        return None if str(self.db) == ":memory:" else self.db.parent / "hf_configs"

    def quality_bounds(self) -> QualityBounds:
        """The thresholds a run's quality is judged by (`pipeline.collection.quality`)."""
        return QualityBounds(
            failed_runs=self.quality_failed_runs,
            share_drop_points=self.quality_share_drop_points,
            outliers=OutlierBounds(low=self.outlier_low_ratio, high=self.outlier_high_ratio),
        )

    def interval(self, provider: str) -> timedelta:
        """The provider's interval: set in `intervals`, else its module's `INTERVAL`."""
        source = sources().get(provider)
        default = source.interval if source is not None else FALLBACK_INTERVAL
        return self.intervals.get(provider) or default

    def stale_threshold(self, provider: str) -> timedelta:
        explicit = self.stale_after.get(provider)
        return explicit if explicit is not None else self.interval(provider) * self.stale_intervals

    def provider_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """What collectors read keys from: the file's keys, overridden by the environment."""
        env = dict(os.environ if environ is None else environ)
        for name, secret in self.api_keys.items():
            env.setdefault(name, secret.get_secret_value())
        return env

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Settings from arguments, environment and the TOML file (if any), in that order."""
        path = config_file or (Path(p) if (p := os.environ.get("GPUPRICES_CONFIG")) else None)
        if path is not None and not path.is_file():
            raise SettingsError(f"Config file {path} does not exist (--config / GPUPRICES_CONFIG)")
        try:
            if path is None:
                return cls(**overrides)
            return _with_toml(cls, path)(**overrides)
        except ValueError as exc:
            raise SettingsError(f"Invalid settings: {_first_error(exc)}") from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        location = ".".join(str(part) for part in first.get("loc", ()))
        return f"{location}: {first.get('msg')}" if location else str(first.get("msg"))
    return str(exc)


def _with_toml(base: type[Settings], path: Path) -> type[Settings]:
    class FileSettings(base):  # type: ignore[valid-type,misc]  # a subclass of the class given
        model_config = SettingsConfigDict(**{**base.model_config, "toml_file": path})

        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))

    return FileSettings
