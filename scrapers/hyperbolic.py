"""Hyperbolic: the keyless on-demand rental options (`GET /v2/alpha/on-demand/rental-options`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- The route answers anonymously, and Hyperbolic's logged-out GPU page loads the same answer
  (getcomputable/gpu-index `observatory/sources/hyperbolic.py`, re-verified 2026-08-29).
  SkyPilot's `fetch_hyperbolic.py` reads another route, `api.dev-hyperbolic.xyz/v2/skypilot/
  catalog`, which needs a Bearer key.
- The answer is a bare JSON list of options, not an object; its membership follows inventory.
- `costPerHourCents` is US cents per hour for the *whole option* (`gpuCount` GPUs, one or more
  `nodes`), divided by `CENTS_PER_DOLLAR` here and quoted per instance; the per-GPU price is
  derived. `providerCostPerHourCents` is the supplier's cost, not a price a buyer pays: never read.
- GPU model and form factor are two lower-case fields (`gpuType` `h100`, `gpuFormFactor` `sxm5` /
  `pcie`), joined as `H100 SXM5` for the catalog; `h100` alone names no board.
- `machineType` (`virtual-machine`, `bare-metal`), `connectionType` (`ethernet`, `infiniband`)
  and `ethernetVariant` (`normal`, `rocev2`) tell options of one GPU apart: they make the offer
  id and its `tier`.
- Availability as stated: `enabled: false` or `totalAvailable: 0` is not available; a missing
  `totalAvailable` is an enabled option listed for rent without a count (gpu-index: "unknown,
  never zero"), read as available.
- `nodes[]` give the hardware per node: `vcpuCount` for VMs, `cpuCount` for bare metal (read as
  the CPU count as served), `ramGb`, `storageGb`; summed over the option's nodes, whose
  `gpuCount`s must add up to the option's (else a reject: the per-GPU price would be wrong).
- Regions are Hyperbolic's own ids (`us-east-1`, `eu-north-6`, `uk-southeast-3`, `jp-east-1`),
  placed by their prefix in `data/hyperbolic_regions.csv`. No spot prices are listed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_bytes
from scrapers.batch import number, offers_of_records, text_field
from scrapers.errors import ProviderPayloadError
from scrapers.models import FormFactor, ParseResult, Pricing

NAME = "hyperbolic"
ENV_KEY = None
KEY_REQUIRED = False  # the rental-options route answers anonymously
URL = "https://api.hyperbolic.ai/v2/alpha/on-demand/rental-options"
INTERVAL = timedelta(minutes=30)  # marketplace inventory: options come and go within hours
CURRENCY = "USD"
CENTS_PER_DOLLAR = 100  # costPerHourCents is US cents per option-hour (gpu-index hyperbolic.py)

FORM_FACTORS = {"sxm4": FormFactor.SXM, "sxm5": FormFactor.SXM, "sxm6": FormFactor.SXM,
                "sxm": FormFactor.SXM, "pcie": FormFactor.PCIE, "nvl": FormFactor.NVL}  # fmt: skip
"""`gpuFormFactor` as served → ours; another value keeps no form factor (the name still has it)."""


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    return fetch_bytes(
        client,
        "GET",
        URL,
        provider=NAME,
        headers={"Accept": "application/json"},
        auth_hint="the anonymous rental-options route refused the request; it may need a key now",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    try:
        options = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProviderPayloadError(f"{NAME}: body is not JSON ({exc})") from exc
    if not isinstance(options, list):
        raise ProviderPayloadError(
            f"{NAME}: body is not a list of rental options at {URL}; the answer changed shape, "
            "update scrapers/hyperbolic.py"
        )
    return offers_of_records(NAME, observed_at, options, _offers_of, id_of=_option_id)


def _option_id(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    parts = [record.get(key) for key in ("gpuType", "gpuFormFactor", "gpuCount", "machineType",
                                         "connectionType", "ethernetVariant")]  # fmt: skip
    name = "-".join(str(part) for part in parts if part is not None)
    region = record.get("region")
    return f"{name}@{region}" if region is not None else name or None


def _available(record: dict[str, Any]) -> bool:
    enabled = record["enabled"]
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled is not true/false: {enabled!r}")
    total = record.get("totalAvailable")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise TypeError(f"totalAvailable is not a count: {total!r}")
    return enabled and total != 0


def _node_sum(nodes: list[dict[str, Any]], *keys: str) -> float | None:
    """The sum over the nodes of the first of `keys` each node has; None when none has one."""
    values = []
    for node in nodes:
        key = next((k for k in keys if node.get(k) is not None), None)
        if key is not None:
            values.append(number(key, node[key]) or 0.0)
    return sum(values) if values else None


def _offers_of(record: Any) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise TypeError(f"a rental option is not an object: {record!r}")
    gpu_type, form = text_field(record, "gpuType"), text_field(record, "gpuFormFactor")
    nodes = record.get("nodes") or []
    if not isinstance(nodes, list) or not all(isinstance(node, dict) for node in nodes):
        raise TypeError(f"nodes is not a list of objects: {nodes!r}")
    node_gpus = _node_sum(nodes, "gpuCount")
    if node_gpus is not None and node_gpus != record["gpuCount"]:
        raise ValueError(f"gpuCount {record['gpuCount']!r} is not its nodes' {node_gpus:g} GPUs")
    cents = number("costPerHourCents", record["costPerHourCents"])
    if cents is None:
        raise ValueError("costPerHourCents is null")
    machine, connection = text_field(record, "machineType"), text_field(record, "connectionType")
    variant = record.get("ethernetVariant")
    tier = f"{machine}, {connection}" + (f" ({variant})" if variant else "")
    return [
        {
            "offer_id": _option_id(record),
            "gpu_raw": f"{gpu_type.upper()} {form.upper()}",
            "form_factor": FORM_FACTORS.get(form.lower()),
            "gpu_count": record["gpuCount"],
            "pricing": Pricing.ON_DEMAND,
            "price_per_hour": cents / CENTS_PER_DOLLAR,
            "region": text_field(record, "region"),
            "available": _available(record),
            "tier": tier,
            "vcpus": _node_sum(nodes, "vcpuCount", "cpuCount"),
            "ram_gb": _node_sum(nodes, "ramGb"),
            "disk_gb": _node_sum(nodes, "storageGb"),
        }
    ]
