"""Nebius AI Cloud: its price API with an IAM token, else the public prices page
(`GET https://nebius.com/prices`), read by meaning.

Quirks (see docs/pages/providers.md and tests/fixtures/README.md):
- With `NEBIUS_IAM_TOKEN` set (the variable the Nebius SDK and CLI read; `nebius iam
  get-access-token` prints one, valid 12 hours) and `NEBIUS_PROJECT_ID`, `fetch` reads the API.
  It is gRPC only, through the `nebius` SDK (imported inside `fetch`, as SkyPilot's
  `fetch_nebius.py` calls it): `iam.v2.ProjectService.Get` (the project's region),
  `compute.v1.PlatformService.List` (the platforms and presets the project can order),
  then `billing.v1alpha1.CalculatorService.Estimate` for each GPU preset, plain and with a
  `preemptible` spec where the platform is `allowed_for_preemptibles`, reading
  `hourly_cost.general.total.cost` (USD per instance-hour, a decimal string). The answers are
  joined into one JSON body, `API_SHAPE`, so `parse` stays pure and `--replay` replays it.
- API offers: one per GPU preset (`gpu-h100-sxm/8gpu-128vcpu-1600gb@eu-north1`), on-demand and,
  where allowed, spot (preemptible), at the preset's price per instance-hour, in the project's
  region. `available` means the preset is offered for order in that region now (the platform
  listing is per project, live), not that capacity is free; CPU presets give no offer.
- The page is keyless. It is a Next.js page: its tables travel as content blocks
  (`{"type":"highlight-table-block","title":"NVIDIA GPU Instances","table":{"content":[[...]]}}`)
  inside the React Server Components payload, JavaScript strings pushed by
  `self.__next_f.push([1,"..."])` scripts (getcomputable/gpu-index records the page so). The
  pushed strings are decoded and joined, and each table block is read as JSON.
- A GPU table is a block whose title has the word `GPU`; its first row is the header, read as
  words: `Item` → the GPU, `vCPUs`, `RAM, GB`, `Preemptible, GPU-hour` → spot (Nebius's
  preemptible VMs: stopped at any time with 60 s notice, docs.nebius.com/compute/virtual-machines/
  preemptible), `On-demand, GPU-hour` → on-demand. Prices are USD per GPU-hour: a price column
  whose label does not say `GPU-hour` is a changed page (`ProviderPayloadError`).
- vCPUs and RAM are one GPU's share (16 vCPUs and 200 GB per H100: preset `1gpu-16vcpu-200gb`),
  so each offer is one GPU with that share; Nebius sells 1- and 8-GPU presets at the same
  per-GPU price (docs.nebius.com/signup-billing/billing-changes-oct-2025).
- `––` and `[Contact us](#ai-contact-form)` mean no price in that column (GB200/GB300 NVL72): no
  offer, no reject. `from $1.82` with vCPUs `16-192` (L40S) is the cheapest of several presets,
  not one offer: the row is a reject with that reason.
- The page quotes one price and no region. Each GPU is listed once per Nebius GPU region of
  `data/nebius_regions.csv` (Finland, Iceland, France, the UK, Israel, the US), as Oracle's list
  is, so `--jurisdiction eea` finds Nebius's EU offers; the page does not say which platform a
  region stocks. `LISTED_ONLY`: listed at a price, not stock (the keyless path).
- No VRAM is on the page; `VRAM_GB` gives it where a board comes in several sizes (H100).
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Literal

import httpx
import orjson
from bs4 import BeautifulSoup

from scrapers.base import USER_AGENT, Credentials, data_rows, fetch_bytes, is_replay
from scrapers.batch import OfferBatch, number, offers_of_records, whole
from scrapers.errors import MissingCredentialsError, ProviderHTTPError, ProviderPayloadError
from scrapers.models import ParseResult, Pricing, json_object_with_list, json_raw, reason_of
from scrapers.pagetext import complete_html, label_words, slug, usd_per_hour, visible_text

NAME = "nebius"
ENV_KEY = "NEBIUS_IAM_TOKEN"  # the Nebius SDK's and CLI's own variable
KEY_REQUIRED = False  # a public web page; a token switches to the price API
URL = "https://nebius.com/prices"
PROJECT_ENV = "NEBIUS_PROJECT_ID"
"""The project whose platforms, region and prices the API path reads (`project-e00...`)."""
API_ADDRESS: str | None = None
"""Where the gRPC calls go: None for the SDK's own Nebius service addresses; a loopback
`127.0.0.1:PORT` (tests) is reached without TLS, anything else with it."""
API_TIMEOUT_S = 20.0
"""Seconds one API call may take, its retries included (the SDK retries UNAVAILABLE)."""
API_SHAPE = """{"project": ID, "region": REGION, "presets": [{"platform", "preset", "gpu_count",
"vcpu_count", "memory_gibibytes", "gpu_memory_gigabytes", "on_demand_usd_per_hour",
"preemptible_usd_per_hour" (null: not allowed)}]}: the API's answers, joined by `fetch`."""
INTERVAL = timedelta(hours=6)  # a published price list: no stock, prices change rarely
CURRENCY = "USD"
LISTED_ONLY = True  # listed at a price, no stock on the page
IN_PRICE_INDEX = False  # list prices, kept out of the price index v1 like every listed-only source

REGIONS = tuple(row["region"] for row in data_rows("nebius_regions"))
"""Nebius's GPU regions; the page's one price is listed in each (see the module docstring)."""
VRAM_GB = {"h100": 80.0}
"""Per-GPU memory (GB) by board words where the page states none and the board has several
sizes: Nebius's H100 is the 80 GB SXM part (platform gpu-h100-sxm)."""

GB_PER_GIB = 1.073741824
Column = Literal["model", "vcpus", "ram", "spot", "on_demand"]
_PUSH = re.compile(r'self\.__next_f\.push\(\[\s*1\s*,\s*("(?:[^"\\]|\\.)*")\s*\]\)', re.DOTALL)
_BLOCK = re.compile(r'\{\s*"type"\s*:\s*"highlight-table-block"')
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
"""`[Contact us](#ai-contact-form)`: a Markdown link, read as its text."""
_RANGE = re.compile(r"^\d+\s*-\s*\d+$")


def fetch(client: httpx.Client, creds: Credentials | None) -> bytes:
    if creds is None or is_replay(client):
        # the page alone, or one recorded answer (the page or a joined API answer)
        return fetch_bytes(
            client,
            "GET",
            URL,
            provider=NAME,
            headers={"Accept": "text/html"},
            auth_hint="the public prices page refused the request (bot protection?); retry later",
        )
    project = _project_id()
    # The SDK refuses to be called synchronously from a thread whose event loop runs (an API
    # worker's may): its calls run on a thread of their own, which has none.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="nebius-sdk") as worker:
        return worker.submit(_api_answer, creds, project).result()


def _project_id() -> str:
    project = os.environ.get(PROJECT_ENV, "").strip()
    if not project:
        raise MissingCredentialsError(
            f"{PROJECT_ENV} is not set: export it with {ENV_KEY}, or unset {ENV_KEY} to read "
            "the page"
        )
    return project


def _flight_text(soup: BeautifulSoup) -> str:
    """The React Server Components payload: every pushed string, decoded, in page order."""
    parts = []
    for script in soup.find_all("script"):
        for match in _PUSH.finditer(script.get_text()):
            try:
                parts.append(json.loads(match.group(1)))
            except json.JSONDecodeError as exc:
                raise ProviderPayloadError(
                    f"{NAME}: a pushed page chunk is not a string ({exc})"
                ) from exc
    return "".join(parts)


def _table_blocks(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    blocks = []
    for match in _BLOCK.finditer(text):
        try:
            block, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError as exc:
            raise ProviderPayloadError(f"{NAME}: a price table block is not JSON ({exc})") from exc
        if isinstance(block, dict):
            blocks.append(block)
    return blocks


def _blocks_of(soup: BeautifulSoup) -> list[dict[str, Any]]:
    """The table blocks of the pushed payload; else of any script, as JSON or JSON escaped once
    inside a string (a page that moves its data out of `self.__next_f.push`)."""
    blocks = _table_blocks(_flight_text(soup))
    scripts = [script.get_text() for script in soup.find_all("script")]
    for text in (*scripts, *(t.replace('\\"', '"') for t in scripts)):
        if blocks:
            break
        blocks = _table_blocks(text)
    return blocks


def _column_of(label: str) -> Column | None:
    words = label_words(label)
    joined = " ".join(words)
    if "preemptible" in words or "spot" in words:
        return "spot"
    if "on demand" in joined or "ondemand" in words:
        return "on_demand"
    if "item" in words or "gpu" in words and "model" in words:
        return "model"
    if "vcpus" in words or "vcpu" in words:
        return "vcpus"
    if "ram" in words:
        return "ram"
    return None


def _gpu_tables(blocks: list[dict[str, Any]]) -> list[tuple[list[Column | None], list[Any]]]:
    tables = []
    for block in blocks:
        if "gpu" not in label_words(str(block.get("title", ""))):
            continue
        content = (block.get("table") or {}).get("content")
        if not isinstance(content, list) or not content or not isinstance(content[0], list):
            raise ProviderPayloadError(f"{NAME}: GPU table {block.get('title')!r} has no rows")
        header = [str(label) for label in content[0]]
        columns = [_column_of(label) for label in header]
        prices = [label for label, column in zip(header, columns, strict=True)
                  if column in ("spot", "on_demand")]  # fmt: skip
        if "model" not in columns or not prices:
            raise ProviderPayloadError(
                f"{NAME}: GPU table {block.get('title')!r} has no GPU or price column (headers: "
                f"{', '.join(header)}) at {URL}; the page layout changed, update scrapers/nebius.py"
            )
        for label in prices:
            if not {"gpu", "hour"} <= set(label_words(label)):
                raise ProviderPayloadError(
                    f"{NAME}: price column {label!r} is not per GPU-hour at {URL}; the page "
                    "changed its unit, update scrapers/nebius.py"
                )
        tables.append((columns, content[1:]))
    return tables


def parse(payload: bytes, observed_at: datetime) -> ParseResult:
    if payload.lstrip()[:1] == b"{":
        return _parse_api(payload, observed_at)
    complete_html(payload, NAME)
    soup = BeautifulSoup(payload, "html.parser")
    tables = _gpu_tables(_blocks_of(soup))
    rows = [(columns, row) for columns, body in tables for row in body]
    if not rows:
        raise ProviderPayloadError(
            f"{NAME}: no GPU price table block (a 'highlight-table-block' titled with GPU) at "
            f"{URL}; the page markup changed, update scrapers/nebius.py"
        )
    batch = OfferBatch(
        NAME,
        observed_at,
        raw_of=lambda i: json_raw(rows[i][1]),
        id_of=lambda i: slug(str(rows[i][1][0])) if rows[i][1] else None,
    )
    for i, (columns, row) in enumerate(rows):
        try:
            batch.add(i, _offers_of(_cells(columns, row)))
        except (KeyError, TypeError, ValueError) as exc:
            batch.reject(i, reason_of(exc))
    result = batch.finish()
    if not result.offer_count:
        raise ProviderPayloadError(
            f"{NAME}: {len(rows)} GPU rows, none usable ({len(result.rejects)} rejected) at "
            f"{URL}; the page changed, update scrapers/nebius.py"
        )
    return result


def _cells(columns: list[Column | None], row: Any) -> dict[Column, str]:
    if not isinstance(row, list) or len(row) != len(columns):
        raise ValueError(f"row has {len(row) if isinstance(row, list) else 0} cells for "
                         f"{len(columns)} column labels")  # fmt: skip
    return {
        column: visible_text(_LINK.sub(r"\1", str(cell)))
        for column, cell in zip(columns, row, strict=True)
        if column is not None
    }


def _share(cells: dict[Column, str], column: Column) -> float | None:
    """One GPU's vCPUs or RAM (GB); a range (`16-192`) is several presets, not one offer."""
    text = cells.get(column, "")
    if not text:
        return None
    if _RANGE.match(text):
        raise ValueError(f"{column} {text!r} is a range of presets, not one offer's")
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise ValueError(f"{column} {text!r} is not a number") from None


def _offers_of(cells: dict[Column, str]) -> list[dict[str, Any]]:
    model = cells["model"]
    prices = {Pricing.SPOT: usd_per_hour(cells.get("spot", "")),
              Pricing.ON_DEMAND: usd_per_hour(cells.get("on_demand", ""))}  # fmt: skip
    if all(price is None for price in prices.values()):
        return []  # `Contact us` / `––`: no listed price
    vcpus, ram_gb = _share(cells, "vcpus"), _share(cells, "ram")
    board = " ".join(word for word in label_words(model) if word not in ("nvidia", "hgx"))
    return [
        {
            "offer_id": f"{slug(model)}@{region}",
            "gpu_raw": model,
            "gpu_count": 1,
            "vram_gb": VRAM_GB.get(board),
            "pricing": pricing,
            "price_per_gpu_hour": price,
            "region": region,
            "available": True,  # listed at a price (LISTED_ONLY), not stock
            "vcpus": vcpus,
            "ram_gb": ram_gb,
        }
        for pricing, price in prices.items()
        if price is not None
        for region in REGIONS
    ]


# the price API (gRPC, through the nebius SDK)


def _api_answer(creds: Credentials, project: str) -> bytes:
    """The project's region, its GPU presets and each one's hourly estimates, as `API_SHAPE`."""
    from nebius.aio.service_error import RequestError
    from nebius.base.options import INSECURE
    from nebius.base.resolver import Constant
    from nebius.sdk import SDK

    address = API_ADDRESS
    sdk = SDK(
        credentials=creds.api_key,
        user_agent_prefix=USER_AGENT,
        resolver=None if address is None else Constant(address),
        address_options=None
        if address is None
        else {address: [(INSECURE, address.startswith("127.0.0.1:"))]},
    )
    try:
        return orjson.dumps(_read_api(sdk, project))
    except RequestError as exc:
        raise _api_error(exc) from None
    finally:
        sdk.sync_close()


def _read_api(sdk: Any, project: str) -> dict[str, Any]:
    from nebius.api.nebius.billing.v1alpha1 import (
        CalculatorServiceClient,
        EstimateRequest,
        ResourceSpec,
    )
    from nebius.api.nebius.common.v1 import ResourceMetadata
    from nebius.api.nebius.compute.v1 import (
        CreateInstanceRequest,
        InstanceSpec,
        ListPlatformsRequest,
        PlatformServiceClient,
        PreemptibleSpec,
        ResourcesSpec,
    )
    from nebius.api.nebius.iam.v2 import GetProjectRequest, ProjectServiceClient

    region = (
        ProjectServiceClient(sdk).get(GetProjectRequest(id=project), timeout=API_TIMEOUT_S).wait()
    )
    platforms = (
        PlatformServiceClient(sdk)
        .list(ListPlatformsRequest(parent_id=project, page_size=999), timeout=API_TIMEOUT_S)
        .wait()
        .items
    )
    calculator = CalculatorServiceClient(sdk)

    def hourly_usd(platform: str, preset: str, preemptible: bool) -> str:
        spec = InstanceSpec(
            resources=ResourcesSpec(platform=platform, preset=preset),
            preemptible=PreemptibleSpec(on_preemption=PreemptibleSpec.PreemptionPolicy.STOP)
            if preemptible
            else None,
        )
        request = EstimateRequest(
            resource_spec=ResourceSpec(
                compute_instance_spec=CreateInstanceRequest(
                    metadata=ResourceMetadata(parent_id=project), spec=spec
                )
            )
        )
        cost = calculator.estimate(request, timeout=API_TIMEOUT_S).wait().hourly_cost
        if cost is None or cost.general is None or cost.general.total is None:
            raise ProviderPayloadError(f"{NAME}: no hourly cost estimated for {platform}/{preset}")
        return str(cost.general.total.cost)

    presets = []
    for platform in platforms:
        name, spot_allowed = platform.metadata.name, platform.status.allowed_for_preemptibles
        for preset in platform.spec.presets:
            if not preset.resources.gpu_count:
                continue  # a CPU preset: no GPU offer, no estimate asked
            presets.append(
                {
                    "platform": name,
                    "preset": preset.name,
                    "gpu_count": preset.resources.gpu_count,
                    "vcpu_count": preset.resources.vcpu_count,
                    "memory_gibibytes": preset.resources.memory_gibibytes,
                    "gpu_memory_gigabytes": platform.spec.gpu_memory_gigabytes or None,
                    "on_demand_usd_per_hour": hourly_usd(name, preset.name, False),
                    "preemptible_usd_per_hour": hourly_usd(name, preset.name, True)
                    if spot_allowed
                    else None,
                }
            )
    return {"project": project, "region": region.spec.region, "presets": presets}


def _api_error(exc: Any) -> ProviderHTTPError:
    """The SDK's failure in our words: the status code and what to do, never the token."""
    code = exc.status.code.name
    if code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        hint = (
            f"check {ENV_KEY} (an IAM token, valid 12 hours: `nebius iam get-access-token`) and "
            f"{PROJECT_ENV}, or unset {ENV_KEY} to read the page"
        )
    else:
        hint = "retry later"
    return ProviderHTTPError(f"{NAME}: the Nebius API answered {code}; {hint}")


def _parse_api(payload: bytes, observed_at: datetime) -> ParseResult:
    body = json_object_with_list(payload, "presets", NAME)
    region = body.get("region")
    if not isinstance(region, str) or not region:
        raise ProviderPayloadError(f"{NAME}: the API answer names no region for its project")
    if not body["presets"]:
        raise ProviderPayloadError(
            f"{NAME}: the API lists no GPU preset for project {body.get('project')!r}; check "
            f"{PROJECT_ENV} (a project in a GPU region), or unset {ENV_KEY} to read the page"
        )
    return offers_of_records(
        NAME,
        observed_at,
        body["presets"],
        lambda preset: _preset_offers(preset, region),
        id_of=lambda preset: (
            f"{preset.get('platform')}/{preset.get('preset')}" if isinstance(preset, dict) else None
        ),
    )


def _usd(name: str, value: object) -> float | None:
    """An estimate's cost: a decimal string (`"23.6"`), None when not asked."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} is not a decimal string: {value!r}")
    return float(value)


def _preset_offers(preset: dict[str, Any], region: str) -> list[dict[str, Any]]:
    platform, name = str(preset["platform"]), str(preset["preset"])
    count = whole("gpu_count", preset["gpu_count"])
    vram_gb = number("gpu_memory_gigabytes", preset.get("gpu_memory_gigabytes"))
    memory_gib = number("memory_gibibytes", preset.get("memory_gibibytes"))
    prices = {
        Pricing.ON_DEMAND: _usd("on_demand_usd_per_hour", preset["on_demand_usd_per_hour"]),
        Pricing.SPOT: _usd("preemptible_usd_per_hour", preset.get("preemptible_usd_per_hour")),
    }
    return [
        {
            "offer_id": f"{platform}/{name}@{region}",
            "gpu_raw": _board_of(platform),
            "gpu_count": count,
            "vram_gb": vram_gb,
            "pricing": pricing,
            "price_per_hour": price,
            "region": region,
            "available": True,  # offered for order in the project's region now (see above)
            "vcpus": preset.get("vcpu_count"),
            "ram_gb": None if memory_gib is None else memory_gib * GB_PER_GIB,
        }
        for pricing, price in prices.items()
        if price is not None
    ]


def _board_of(platform: str) -> str:
    """`gpu-h100-sxm` → `NVIDIA H100 SXM`, `gpu-l40s-a` → `NVIDIA L40S` (the `-a`/`-d` suffix is
    the host CPU, Intel or AMD), `gpu-rtx-pro-6000` → `NVIDIA RTX PRO 6000`."""
    words = platform.removeprefix("gpu-").split("-")
    if len(words) > 1 and words[-1] in ("a", "d", "i"):
        words = words[:-1]
    return " ".join(["NVIDIA", *(word.upper() for word in words)])
