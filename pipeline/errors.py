"""Errors raised by the pipeline.

PipelineError            every pipeline failure
├── UnknownGpuError      a GPU name the catalog cannot resolve (message names the closest ids)
├── UnknownProviderError a provider name that is not registered
├── WorkloadError        an impossible fine-tuning workload (names the field; suggestions)
└── LauncherError        a quote no launcher task can be written for (names the field)
"""

from __future__ import annotations

__all__ = [
    "LauncherError",
    "PipelineError",
    "UnknownGpuError",
    "UnknownProviderError",
    "WorkloadError",
]


class PipelineError(Exception):
    """The pipeline could not do what was asked; the message says what to fix."""


class UnknownGpuError(PipelineError):
    def __init__(self, name: str, closest: list[str]) -> None:
        hint = f"; closest: {', '.join(closest)}" if closest else "; see GET /gpus for known ids"
        super().__init__(f"Unknown GPU '{name}'{hint}")
        self.name = name
        self.closest = closest


class UnknownProviderError(PipelineError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"Unknown provider '{name}'; known: {', '.join(known)}")
        self.name = name


class WorkloadError(PipelineError):
    """A workload that cannot be estimated: `field` names the input to fix."""

    def __init__(self, field: str, message: str, closest: list[str] | None = None) -> None:
        hint = f"; closest: {', '.join(closest)}" if closest else ""
        super().__init__(f"{field}: {message}{hint}")
        self.field = field
        self.detail = f"{message}{hint}"
        self.closest = closest or []


class LauncherError(PipelineError):
    """A task file that cannot be written: an unknown launcher, a quote that is not there, or
    an offer on a cloud or GPU the launcher cannot run; `field` names the input to change."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
