"""Side by side with gpuhunt: the same N offers, the same question, in the same run.

Generates N current offers over the four providers (bench/market.py, seeded) and loads them
1. into gpuprices through the normal ingest path (Vast.ai's body through `vastai.parse`, every
   provider through `normalize` and `store_run`), served by `gpuprices serve` on 127.0.0.1;
2. into gpuhunt's offline catalog: the same offers as gpuhunt `CatalogItem`s (GPU family name as
   gpuhunt spells it, VRAM per GPU, price per instance-hour), written with gpuhunt's own
   `storage.dump` and read back with its `storage.load`, as `Catalog.load` does with a download.

Then asks both for 80 GB A100s: gpuhunt `Catalog.query(gpu_name="A100", min_gpu_memory=80)` (an
in-memory scan, every call) and gpuprices `GET /offers?gpu=A100-80GB&limit=100` (over HTTP, and
`current_offers` in process), and prints medians and the ratio. gpuhunt's own catalogs are per
provider (`OFFLINE_PROVIDERS`); here they are our four providers' offers, so the run patches its
provider list to them (its query code is unchanged).

    .venv/bin/python bench/compare_gpuhunt.py --offers 100000
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import gpuhunt
import gpuhunt._internal.catalog as gh_catalog
from gpuhunt._internal import storage
from gpuhunt._internal.models import AcceleratorVendor, CatalogItem
from gpuhunt.version import __version__ as GPUHUNT_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import HEADLINE, drive  # noqa: E402
from market import build_market, serving, store_market  # noqa: E402
from report import record_target  # noqa: E402

from pipeline.catalog import get_catalog  # noqa: E402
from pipeline.market.offers import OfferQuery, current_offers  # noqa: E402
from pipeline.market.serving import OfferServer  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from warehouse import Warehouse  # noqa: E402

TARGET_SPEEDUP = 100.0
VENDORS = {"NVIDIA": AcceleratorVendor.NVIDIA, "AMD": AcceleratorVendor.AMD}


def gpuhunt_items(rows: list[dict[str, Any]]) -> dict[str, list[CatalogItem]]:
    """Our stored offers as gpuhunt items, per provider (gpuhunt names a GPU by its family)."""
    catalog = get_catalog()
    family = {v.id: (v.family.replace(" ", ""), v.vendor) for v in catalog.variants}
    items: dict[str, list[CatalogItem]] = {}
    for row in rows:
        name, vendor = family.get(row["gpu"], (row["gpu_raw"], "NVIDIA"))
        items.setdefault(row["provider"], []).append(
            CatalogItem(
                provider=row["provider"],
                instance_name=row["offer_id"],
                location=row["region"] or "-",  # gpuhunt requires one
                price=row["price_per_hour"],
                cpu=int(row["vcpus"] or 0),
                memory=float(row["ram_gb"] or 0),
                gpu_count=row["gpu_count"],
                gpu_name=name,
                gpu_memory=row["vram_gb"],
                spot=row["pricing"] == "spot",
                disk_size=row["disk_gb"],
                gpu_vendor=VENDORS.get(vendor, AcceleratorVendor.NVIDIA),
            )
        )
    return items


def load_gpuhunt(items: dict[str, list[CatalogItem]]) -> tuple[gpuhunt.Catalog, float]:
    """gpuhunt's offline catalog over `items`, read through its CSV storage; load seconds."""
    files = {}
    for provider, provider_items in items.items():
        buffer = io.StringIO()
        with tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=False) as out:
            path = out.name
        storage.dump(provider_items, path)
        buffer.write(Path(path).read_text())
        os.unlink(path)
        files[provider] = buffer.getvalue()
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    started = time.perf_counter()
    for provider, text in files.items():
        loaded = list(storage.load(io.StringIO(text), provider=provider))
        catalog.catalog[provider] = gh_catalog.ProviderCatalog(version="bench", items=loaded)
    catalog.loaded_at = time.monotonic()
    return catalog, time.perf_counter() - started


def median_ms(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3, result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeats", type=int, default=7, help="gpuhunt queries (slow)")
    parser.add_argument("--http-repeats", type=int, default=300)
    parser.add_argument("--results", type=Path, help="append target results (JSON lines) here")
    args = parser.parse_args()

    print(
        f"python {platform.python_version()}, gpuhunt {GPUHUNT_VERSION}, cpus {os.cpu_count()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    market = build_market(args.offers, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "current.duckdb"
        with Warehouse.open(db) as warehouse:
            started = time.perf_counter()
            store_market(warehouse, market)
            t_ingest = time.perf_counter() - started
            everything = current_offers(warehouse, OfferQuery(include_unavailable=True))
            server = OfferServer(warehouse, Settings(db=db))
            query = OfferQuery(gpu="A100-80GB", limit=100)
            server.offers(query)  # reads the in-memory copy
            t_ours_mem, ours = median_ms(args.http_repeats, lambda: server.offers(query))
            all_a100 = current_offers(warehouse, OfferQuery(gpu="A100-80GB"))
        print(f"offers: {len(everything):,} over {sorted({r['provider'] for r in everything})}")
        print(f"gpuprices ingest (parse + normalize + store, 4 runs): {t_ingest:.2f} s")

        catalog, t_load = load_gpuhunt(gpuhunt_items(everything))
        print(f"gpuhunt load (storage.load of the same offers): {t_load:.2f} s")
        providers = sorted(catalog.catalog)
        with (
            mock.patch.object(gh_catalog, "OFFLINE_PROVIDERS", providers),
            mock.patch.object(gh_catalog, "ONLINE_PROVIDERS", []),
        ):
            t_hunt, hunted = median_ms(
                args.repeats, lambda: catalog.query(gpu_name="A100", min_gpu_memory=80)
            )
        with serving(db) as (base, _pid):
            drive(base, [HEADLINE], 50, 1, 30.0)  # warm-up
            tally = drive(base, [HEADLINE], args.http_repeats, 1, 60.0)
            # The same question made new each time (a price cap no offer reaches): no page
            # made before serves it, each is a selection over the in-memory copy
            fresh = [f"{HEADLINE}&max_price_per_gpu={1000 + n / 1000:.3f}"
                     for n in range(args.http_repeats)]  # fmt: skip
            unique = drive(base, fresh, len(fresh), 1, 60.0)
        t_http = statistics.median(tally.latencies) * 1e3
        t_unique = statistics.median(unique.latencies) * 1e3

    print(f"80 GB A100 offers: gpuhunt {len(hunted):,}, gpuprices {len(all_a100):,} (no limit)")
    print(f"{'question':<58}{'median ms':>10}")
    print(f"{'gpuhunt Catalog.query(gpu_name=A100, min_gpu_memory=80)':<58}{t_hunt:>10.2f}")
    print(f"{'gpuprices current_offers(gpu=A100-80GB, limit=100)':<58}{t_ours_mem:>10.3f}")
    print(f"{'gpuprices GET ' + HEADLINE + ' (HTTP)':<58}{t_http:>10.2f}")
    print(f"{'the same, a never-asked price cap each time (HTTP)':<58}{t_unique:>10.2f}")
    speedup = t_hunt / max(t_http, t_unique)
    in_process = t_hunt / t_ours_mem
    print(f"ratio gpuhunt / gpuprices over HTTP: {speedup:.0f}x; in process {in_process:.0f}x")
    same = len(hunted) == len(all_a100) and len(ours) == min(100, len(all_a100))
    if not same:
        print("WARNING: the two answers do not cover the same offers")
    record_target(
        args.results,
        f"/offers vs gpuhunt Catalog.query, {len(everything):,} offers",
        f"{speedup:.0f}x ({max(t_http, t_unique):.2f} ms, repeated {t_http:.2f} / new "
        f"{t_unique:.2f}, vs {t_hunt:.0f} ms)",
        f">= {TARGET_SPEEDUP:.0f}x",
        speedup >= TARGET_SPEEDUP and same,
    )


if __name__ == "__main__":
    main()
