"""Provider quality over the last runs, as `/quality`, `gpuprices quality`, `/metrics`, the page
and the provider-health alerts show it (measured at ingest: pipeline/collection/quality.py)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Literal

import orjson

from pipeline.base import provider_module
from warehouse import Warehouse
from warehouse import quality as wq

__all__ = ["MAX_RUNS", "Health", "health_of", "provider_health", "quality_overview"]

MAX_RUNS = 50
"""Runs shown per provider (the newest, since `since` when given)."""
Health = Literal["ok", "degraded", "failing", "not_configured"]


def _json_list(text: str | None) -> list[str]:
    return [] if text is None else list(orjson.loads(text))


def health_of(run: dict[str, Any]) -> Health:
    """A run as a provider's health: degraded, failing (failed, not yet degraded), not configured
    (its required key is not set: never degraded) or ok."""
    if run["degraded"]:
        return "degraded"
    if run["state"] == "not_configured":
        return "not_configured"
    return "failing" if run["state"] == "failed" else "ok"


_AS_STORED = ("run_id", "observed_at", "state", "offer_count", "resolved_count", "reject_count",
              "unknown_names")  # fmt: skip
"""The figures of a run shown as `run_quality` stores them."""


def _run_out(run: dict[str, Any]) -> dict[str, Any]:
    added, missing = _json_list(run["fields_added"]), _json_list(run["fields_missing"])
    offers = run["offer_count"]
    return {
        **{name: run[name] for name in _AS_STORED},
        "health": health_of(run),
        "resolved_share": run["resolved_count"] / offers if offers else None,
        "fields_added": added,
        "fields_missing": missing,
        "drift": len(added) + len(missing),
        "reasons": _json_list(run["reasons"]),
    }


_SUMMARY = ("health", "resolved_share", "reject_count", "unknown_names", "drift", "reasons")
"""The figures of its newest run that head a provider's overview."""


def quality_overview(
    warehouse: Warehouse,
    provider: str | None = None,
    since: datetime | None = None,
    runs_per_provider: int = MAX_RUNS,
) -> list[dict[str, Any]]:
    """Per provider: its newest run's health and figures, its runs since `since` (newest first),
    and, of its newest run, the unknown GPU spellings, rejects by reason and flagged offers."""
    if provider is not None:
        provider_module(provider)
    with warehouse.cursor() as cur:
        runs = wq.quality_runs(cur, provider, since, runs_per_provider)
        by_provider: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for run in runs:
            by_provider[run["provider"]].append(run)
        newest = [r[0]["run_id"] for r in by_provider.values()]
        newest_ok = [
            next((run["run_id"] for run in r if run["state"] == "ok"), "")
            for r in by_provider.values()
        ]
        details = {
            "unknown_gpus": wq.unknown_gpus_of_runs(cur, newest),
            "rejects_by_reason": wq.reject_reasons_of_runs(cur, newest),
            "flagged_offers": wq.outliers_of_runs(cur, [run_id for run_id in newest_ok if run_id]),
        }
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for kind, rows in details.items():
        for row in rows:
            grouped[row.pop("provider")][kind].append(row)
    overview = []
    for name, provider_runs in sorted(by_provider.items()):
        latest = _run_out(provider_runs[0])
        overview.append(
            {
                "provider": name,
                **{k: latest[k] for k in _SUMMARY},
                "last_run_at": latest["observed_at"],
                **{kind: grouped[name][kind] for kind in details},
                "runs": [_run_out(run) for run in provider_runs],
            }
        )
    return overview


def provider_health(warehouse: Warehouse) -> dict[str, dict[str, Any]]:
    """Each provider's newest run, by provider: its health, reasons and figures."""
    with warehouse.cursor() as cur:
        latest = wq.latest_quality(cur)
    return {run["provider"]: _run_out(run) for run in latest}
