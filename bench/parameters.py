"""What binding the catalog's GPU figures to a query costs: as one JSON text or as a list.

`warehouse.offers.offers_relation` binds the figures behind the derived columns (one per catalog
row and form factor, four fields each) to every offers query that is not served from memory
(`as_of`, exports, the in-memory copy's build). DuckDB's Python driver converts a parameter
value by value, trying `import pandas` for each where pandas is not installed; one JSON text is
one value. Prints the median time of the same query both ways, and of a query with no
parameter, in one process.

    .venv/bin/python bench/parameters.py --repeats 200
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict

import duckdb

from pipeline.catalog import get_catalog
from pipeline.market.catalog_figures import gpu_figures
from warehouse.offers import _FIGURES


def median_ms(query: Callable[[], object], repeats: int) -> float:
    query()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        query()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="timed calls per way")
    args = parser.parse_args()
    figures = [asdict(f) for f in gpu_figures(get_catalog())]
    conn = duckdb.connect()
    count = f"SELECT count(*) FROM (SELECT unnest(?::{{}}{_FIGURES}, recursive := true))"
    ways = {
        "no parameter": lambda: conn.execute("SELECT 1").fetchall(),
        "figures as one JSON text": lambda: conn.execute(
            count.format("JSON::"), [json.dumps(figures)]
        ).fetchall(),
        "figures as a list of dicts": lambda: conn.execute(count.format(""), [figures]).fetchall(),
    }
    print(
        f"python {platform.python_version()}, duckdb {duckdb.__version__}, cpus {os.cpu_count()}, "
        f"pandas {'installed' if importlib.util.find_spec('pandas') else 'not installed'}; "
        f"{len(figures)} figures, {len(figures) * 4} values"
    )
    for label, query in ways.items():
        print(f"{label:28} {median_ms(query, args.repeats):8.2f} ms")


if __name__ == "__main__":
    main()
