"""Prime Intellect (an aggregator): its GPU availability (`GET /api/v1/availability/gpus`).

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- Prime Intellect rents other clouds' machines: each offer's `provider` names the cloud behind
  it (`lambdalabs`, `hyperstack`, `runpod`, its own `primecompute`). Our `provider` stays
  `primeintellect`; that cloud becomes the offer's `seller`, as our provider name where it has
  another spelling (`SELLERS`), else lower-case as served.
- A key is required (`Authorization: Bearer`, permission "Availability: Read"), read from
  `PRIME_API_KEY`, the variable Prime Intellect's own CLI reads.
- The list is paginated (`page`, `page_size`, `totalCount`): pages are read until `totalCount`
  items are in or a page comes back short, at most `MAX_PAGES`, and joined into one body.
- An intermittent empty `200 {"items": [], "totalCount": 0}` comes from a flaky replica
  (SkyPilot's `fetch_primeintellect.py`: "rows vanished and repopulated on retry within
  seconds"). An empty list is therefore a `ProviderPayloadError`: the run fails and the stored
  snapshot stays, never replaced by an empty one (an honest sell-out of every GPU reads the same
  way; the snapshot then ages, as `/quality` shows).
- `prices.onDemand` is USD per hour for the *whole offer* (`gpuCount` GPUs; SkyPilot: "the
  2-GPU Blackwell box is $2.70 = 2 x $1.35/GPU"), quoted per instance here. No spot price is
  read: the documented answer has none.
- `gpuMemory` is the GB of the whole offer (SkyPilot: "the 2-GPU Blackwell offer reports 192"):
  divided by `gpuCount` for the memory per GPU.
- `gpuType` spells model and memory with underscores (`H100_80GB`, `RTX_PRO_6000B_96GB`) and
  `socket` the board (`SXM5`, `PCIe`): the GPU name is both (`H100 80GB SXM5`).
- `stockStatus` (`Available`, `Low`, `Medium`, `High`, `Unavailable`) is the availability: the
  first four are rentable now; another value is a reject (a new level is not guessed).
- The place is `dataCenter` when the offer names one (`us-east-1`), else `region`
  (`united_states`); `security` (`secure_cloud`, `community_cloud`) is the tier and, with the
  cloud's `cloudId`, part of the offer id.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import orjson

from scrapers.base import Credentials, fetch_with_key, is_replay
from scrapers.batch import decimal, number, offers_of_records, text_field
from scrapers.errors import ProviderPayloadError
from scrapers.models import (
    FormFactor,
    ParseResult,
    Pricing,
    json_object_with_list,
    seller_name,
)

NAME = "primeintellect"
ENV_KEY = "PRIME_API_KEY"
KEY_REQUIRED = True  # the availability routes are authenticated
URL = "https://api.primeintellect.ai/api/v1/availability/gpus"
INTERVAL = timedelta(minutes=15)  # a live market: offers flip within minutes (SkyPilot)
CURRENCY = "USD"
PAGE_SIZE = 100
MAX_PAGES = 50  # 5,000 offers: far above the few hundred the market lists

SELLERS = {"lambdalabs": "lambda", "datacrunch": "verda"}
"""Prime Intellect's `provider` → our provider name, where the two differ; any other cloud is
kept lower-case as served (`hyperstack`, `runpod`, `primecompute`)."""

FORM_FACTORS = {"pcie": FormFactor.PCIE, "nvl": FormFactor.NVL}
"""`socket` as served → ours (every `SXM<n>` is SXM); another socket keeps no form factor."""

IN_STOCK = frozenset({"available", "low", "medium", "high"})
OUT_OF_STOCK = frozenset({"unavailable", "out_of_stock", "out of stock"})


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    items: list[Any] = []
    total: Any = None
    for page in range(1, MAX_PAGES + 1):
        body = json_object_with_list(_page(client, creds, page), "items", NAME, f"page {page}")
        items += body["items"]
        total = body.get("totalCount")
        short = len(body["items"]) < PAGE_SIZE
        if short or is_replay(client) or (isinstance(total, int) and len(items) >= total):
            return orjson.dumps({"items": items, "totalCount": total})
    raise ProviderPayloadError(f"{NAME}: more than {MAX_PAGES} pages of {PAGE_SIZE} offers")


def _page(client: httpx.Client, creds: Credentials | None, page: int) -> bytes:
    """One page of offers; without a key, not configured: nothing is sent."""
    return fetch_with_key(
        client,
        str(httpx.URL(URL, params={"page": page, "page_size": PAGE_SIZE})),
        creds,
        provider=NAME,
        env_key=ENV_KEY,
        auth_hint=f"check {ENV_KEY} (a key with Availability: Read)",
    )


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    items = json_object_with_list(payload, "items", NAME)["items"]
    if not items:
        raise ProviderPayloadError(
            f"{NAME}: the answer lists no offers (items [], totalCount "
            f"{orjson.loads(payload).get('totalCount')!r}); Prime Intellect serves this "
            "intermittently, so the run fails and the previous snapshot stays"
        )
    return offers_of_records(NAME, observed_at, items, _offers_of, id_of=_offer_id)


def _place(record: dict[str, Any]) -> str | None:
    for key in ("dataCenter", "region"):
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _offer_id(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    parts = (record.get("provider"), record.get("cloudId"), record.get("security"))
    name = ":".join(str(part) for part in parts if part is not None)
    place = _place(record)
    return f"{name}@{place}" if place else name or None


def _available(record: dict[str, Any]) -> bool:
    status = text_field(record, "stockStatus").lower()
    if status in IN_STOCK:
        return True
    if status in OUT_OF_STOCK:
        return False
    raise ValueError(f"stockStatus {record['stockStatus']!r} is not a known stock level")


def _offers_of(record: Any) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        raise TypeError(f"an offer is not an object: {record!r}")
    gpu_count = record["gpuCount"]
    prices = record["prices"]
    if not isinstance(prices, dict):
        raise TypeError(f"prices is not an object: {prices!r}")
    box_memory_gb = number("gpuMemory", record.get("gpuMemory"))
    socket = record.get("socket")
    gpu_raw = text_field(record, "gpuType").replace("_", " ")
    if isinstance(socket, str) and socket.strip():
        gpu_raw = f"{gpu_raw} {socket.strip()}"
    form = socket.strip().lower() if isinstance(socket, str) else ""
    per_gpu = box_memory_gb / gpu_count if box_memory_gb and isinstance(gpu_count, int) else None
    return [
        {
            "offer_id": _offer_id(record),
            "seller": seller_name(record["provider"], SELLERS),
            "gpu_raw": gpu_raw,
            "form_factor": FormFactor.SXM if form.startswith("sxm") else FORM_FACTORS.get(form),
            "gpu_count": gpu_count,
            "vram_gb": per_gpu if gpu_count else None,
            "pricing": Pricing.ON_DEMAND,
            "price_per_hour": decimal("prices.onDemand", prices["onDemand"]),
            "region": _place(record),
            "available": _available(record),
            "tier": record.get("security"),
        }
    ]
