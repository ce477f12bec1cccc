"""A market to search: the recorded Vast.ai body with its 8 x H100 SXM machine also offered as
1, 2 and 4 GPUs (the same record, its count and price scaled), beside the other providers'
recorded answers. Stored through `collect --replay`'s path (`run_collection`)."""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.collection.collect import run_collection
from tests.conftest import FIXTURES, OBSERVED_AT
from warehouse import Warehouse

H100_RECORD_ID = 24581137
"""The recorded 8 x H100 SXM machine."""
SPLIT_COUNTS = (1, 2, 4)


def vastai_body_with_h100_sizes() -> bytes:
    body = orjson.loads((FIXTURES / "vastai_bundles.json").read_bytes())
    h100 = next(r for r in body["offers"] if r["id"] == H100_RECORD_ID)
    for n, count in enumerate(SPLIT_COUNTS, start=1):
        share = count / h100["num_gpus"]
        body["offers"].append(
            {
                **h100,
                "id": H100_RECORD_ID + n,
                "ask_contract_id": h100.get("ask_contract_id", H100_RECORD_ID) + n,
                "num_gpus": count,
                "dph_base": round(h100["dph_base"] * share, 4),
                "min_bid": round(h100["min_bid"] * share, 4),
            }
        )
    return orjson.dumps(body)


def replays(tmp_path: Path) -> dict[str, Path]:
    vastai = tmp_path / "vastai_h100_sizes.json"
    vastai.write_bytes(vastai_body_with_h100_sizes())
    return {
        "vastai": vastai,
        "runpod": FIXTURES / "runpod_sweep.json",
        "lambda": FIXTURES / "lambda_instance_types.json",
        "coreweave": FIXTURES / "coreweave_pricing.html",
    }


def collect_market(warehouse: Warehouse, tmp_path: Path) -> None:
    given = replays(tmp_path)
    run_collection(list(given), warehouse, replays=given, now=lambda: OBSERVED_AT)
