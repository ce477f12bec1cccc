"""A synthetic market shared by the benchmarks: N current offers over the four providers, seeded.

Vast.ai's share is a raw search body (records cloned from the recorded fixture, with fresh ids,
GPUs, places and jittered prices) that goes through `vastai.parse`; the other providers' shares
are the offers their parsers would hand over (rows added to an `OfferBatch`, as they add them).
Everything is stored through the normal ingest path, as a collection run stores it: `normalize`,
then `pipeline.collection.collect.store_run` (one Arrow batch, one transaction, one bulk insert
per provider).

Not a benchmark itself: `bench/ingest.py`, `bench/compare_gpuhunt.py` and `bench/load.py` import
it, and each of them still runs alone.
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

from pipeline.catalog import get_catalog
from pipeline.collection.collect import store_run
from pipeline.collection.normalize import normalize
from scrapers import vastai
from scrapers.batch import OfferBatch
from scrapers.models import ParseResult, Pricing
from warehouse import RunRow, Warehouse

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "vastai_bundles.json"
OBSERVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
MIB_PER_GIB = 1024

SHARES = {"vastai": 0.72, "runpod": 0.18, "lambda": 0.05, "coreweave": 0.05}
"""Share of the offers per provider (Vast.ai's marketplace dominates, as in bench/history.py)."""

# (Vast.ai spelling, gpu_ram MiB per GPU, base USD per GPU-hour, weight)
VAST_GPUS: list[tuple[str, int, float, int]] = [
    ("RTX 4090", 24564, 0.35, 30), ("RTX 3090", 24576, 0.20, 20), ("RTX 5090", 32607, 0.60, 12),
    ("A100 SXM4", 81920, 1.10, 6), ("A100 PCIE", 81920, 0.95, 4), ("A100 SXM4", 40960, 0.80, 3),
    ("A100 PCIE", 40960, 0.70, 3), ("H100 SXM", 81559, 1.90, 6), ("H100 PCIE", 81559, 1.60, 3),
    ("H100 NVL", 95830, 2.00, 2), ("H200", 143771, 2.60, 2), ("L40S", 46068, 0.70, 4),
    ("A40", 46068, 0.40, 3), ("RTX A6000", 49140, 0.45, 5), ("RTX 6000Ada", 49140, 0.75, 3),
    ("Tesla V100", 16384, 0.15, 2), ("RTX A5000", 24564, 0.22, 3), ("Q RTX 8000", 49152, 0.30, 1),
]  # fmt: skip
VAST_PLACES = [
    "Texas, US", "California, US", "Ontario, CA", "Quebec, CA", "Bavaria, DE", "Hesse, DE",
    "Ile-de-France, FR", "Stockholm, SE", "Oslo, NO", "Warsaw, PL", "England, GB", "Tokyo, JP",
    "Taiwan, TW", "Guangxi, CN", None,
]  # fmt: skip
# (provider spelling, VRAM GB, base USD per GPU-hour)
RUNPOD_GPUS = [
    ("NVIDIA A100 80GB PCIe", 80, 1.19), ("NVIDIA A100-SXM4-80GB", 80, 1.39),
    ("NVIDIA H100 80GB HBM3", 80, 2.39), ("NVIDIA GeForce RTX 4090", 24, 0.69),
    ("NVIDIA H200", 141, 3.59), ("NVIDIA L40S", 48, 0.86), ("NVIDIA RTX A6000", 48, 0.49),
]
RUNPOD_REGIONS = ["US-TX-3", "US-GA-1", "US-KS-2", "CA-MTL-1", "EU-RO-1", "EU-SE-1", "EUR-IS-1"]
LAMBDA_GPUS = [("A100", 80, 1.79, "SXM"), ("A100", 40, 1.29, "SXM"), ("H100", 80, 2.99, "SXM"),
               ("A10", 24, 0.75, None), ("GH200", 96, 1.49, None), ("B200", 180, 4.99, "SXM")]
LAMBDA_REGIONS = ["us-east-1", "us-west-1", "us-south-1", "europe-central-1", "asia-northeast-1"]
COREWEAVE_GPUS = [("A100 80GB SXM", 80, 2.21), ("H100 SXM", 80, 6.16), ("H200", 141, 6.31),
                  ("B200", 180, 8.60), ("L40S", 48, 2.25), ("GH200", 96, 6.50)]
COREWEAVE_REGIONS = ["North America", "Europe"]
GPU_COUNTS = (1, 1, 1, 2, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class Market:
    vastai_body: bytes
    vastai_offers: int
    parsed: dict[str, ParseResult]
    """The other providers' parsed offers, by provider."""

    @property
    def size(self) -> int:
        return self.vastai_offers + sum(len(r.offers) for r in self.parsed.values())


def split(n_offers: int) -> dict[str, int]:
    """Offers per provider, adding up to `n_offers`."""
    counts = {name: int(n_offers * share) for name, share in SHARES.items()}
    counts["vastai"] += n_offers - sum(counts.values())
    return counts


def vastai_body(n_offers: int, seed: int, *, spot_share: float = 0.5) -> bytes:
    """A Vast.ai search body whose records parse to exactly `n_offers` offers.

    A record with a `min_bid` is two offers (on-demand and spot); `spot_share` of the records
    have one. Every record is rentable and not rented, so every offer is available.
    """
    rng = random.Random(seed)
    templates = orjson.loads(SAMPLE.read_bytes())["offers"]
    n_records = max(1, round(n_offers / (1 + spot_share)))
    n_spot = n_offers - n_records
    spot_from = n_records - n_spot
    names, weights = [g[:3] for g in VAST_GPUS], [g[3] for g in VAST_GPUS]
    records = []
    for i in range(n_records):
        record = dict(rng.choice(templates))
        gpu_name, gpu_ram, base = rng.choices(names, weights)[0]
        count = rng.choice(GPU_COUNTS)
        dph = round(base * count * rng.lognormvariate(0, 0.25), 6)
        record.update(
            id=10_000_000 + i,
            ask_contract_id=10_000_000 + i,
            gpu_name=gpu_name,
            gpu_ram=gpu_ram,
            num_gpus=count,
            dph_base=dph,
            min_bid=round(dph * rng.uniform(0.4, 0.9), 6) if i >= spot_from else None,
            geolocation=rng.choice(VAST_PLACES),
            rentable=True,
            rented=False,
        )
        records.append(record)
    return orjson.dumps({"offers": records})


def _offers(
    provider: str,
    n_offers: int,
    rng: random.Random,
    gpus: list[tuple[Any, ...]],
    regions: list[str],
    observed_at: datetime,
) -> ParseResult:
    batch = OfferBatch(provider, observed_at, raw_of=str, id_of=str)
    for i in range(n_offers):
        gpu_raw, vram_gb, base, *rest = rng.choice(gpus)
        count = 8 if provider == "coreweave" else rng.choice(GPU_COUNTS)
        per_gpu = round(base * rng.uniform(0.9, 1.1), 4)
        pricing = Pricing.SPOT if provider == "runpod" and i % 3 == 2 else Pricing.ON_DEMAND
        common: dict[str, Any] = {
            "offer_id": f"{provider}-{i}",
            "gpu_raw": gpu_raw,
            "gpu_count": count,
            "vram_gb": float(vram_gb),
            "region": rng.choice(regions),
            "available": True,
            "pricing": pricing,
            "form_factor": rest[0] if rest else None,
        }
        if provider in ("runpod", "lambda"):
            batch.add(i, [{"price_per_gpu_hour": per_gpu, **common}])
        else:
            batch.add(i, [{"price_per_hour": round(per_gpu * count, 4), **common}])
    return batch.finish()


_OTHERS: dict[str, tuple[list[tuple[Any, ...]], list[str]]] = {
    "runpod": (RUNPOD_GPUS, RUNPOD_REGIONS),
    "lambda": (LAMBDA_GPUS, LAMBDA_REGIONS),
    "coreweave": (COREWEAVE_GPUS, COREWEAVE_REGIONS),
}


def build_market(n_offers: int, seed: int, observed_at: datetime = OBSERVED_AT) -> Market:
    counts = split(n_offers)
    rng = random.Random(seed)
    parsed = {
        name: _offers(name, counts[name], rng, gpus, regions, observed_at)
        for name, (gpus, regions) in _OTHERS.items()
    }
    return Market(vastai_body(counts["vastai"], seed), counts["vastai"], parsed)


def store_market(
    warehouse: Warehouse, market: Market, observed_at: datetime = OBSERVED_AT
) -> dict[str, ParseResult]:
    """Parse Vast.ai's body and store every provider's snapshot as a collection run does.

    Returns the normalized result of each provider (what was stored).
    """
    catalog = get_catalog()
    stored = {}
    results = {"vastai": vastai.parse(market.vastai_body, observed_at), **market.parsed}
    for provider, parsed in results.items():
        result = normalize(parsed, catalog)
        run = RunRow(
            run_id=f"{provider}-bench-{uuid.uuid4().hex[:8]}",
            provider=provider,
            started_at=observed_at,
            finished_at=observed_at + timedelta(seconds=1),
            observed_at=observed_at,
            status="ok",
            offer_count=result.offer_count,
            reject_count=len(result.rejects),
            error=None,
            source="bench",
        )
        store_run(warehouse, run, result)
        stored[provider] = result
    return stored


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(db: Path, *, ready_timeout_s: float = 60.0) -> Iterator[tuple[str, int]]:
    """`gpuprices serve --no-scheduler` on 127.0.0.1 over `db`; yields (base URL, server pid)."""
    port = free_port()
    cli = Path(sys.executable).with_name("gpuprices")
    command = [str(cli), "serve", "--no-scheduler", "--host", "127.0.0.1", "--port", str(port),
               "--db", str(db)]  # fmt: skip
    with _process(command, port, "/healthz", ready_timeout_s) as served:
        yield served


@contextmanager
def floor_serving(body_bytes: int, *, ready_timeout_s: float = 60.0) -> Iterator[tuple[str, int]]:
    """bench/floor.py (a bare ASGI app, same uvicorn settings) on 127.0.0.1."""
    port = free_port()
    command = [sys.executable, str(Path(__file__).with_name("floor.py")), "--port", str(port),
               "--body-bytes", str(body_bytes)]  # fmt: skip
    with _process(command, port, "/", ready_timeout_s) as served:
        yield served


@contextmanager
def _process(
    command: list[str], port: int, ready_path: str, ready_timeout_s: float
) -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {process.returncode}")
            try:
                if httpx.get(f"{base}{ready_path}", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} not ready after {ready_timeout_s:.0f} s")
            time.sleep(0.2)
        yield base, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rss_mb(pid: int) -> float:
    """Resident set size of a process (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")
