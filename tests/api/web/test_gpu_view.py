from __future__ import annotations

import pytest

from api.web.gpu_view import gpu_rows, sort_gpu_rows


def offer(gpu, provider, pricing, price, *, vram=80.0, available=True, form=None):
    return {
        "gpu": gpu,
        "gpu_raw": gpu or "Mystery 9000",
        "form_factor": form,
        "provider": provider,
        "pricing": pricing,
        "price_per_gpu_hour": price,
        "vram_gb": vram,
        "available": available,
    }


def test_a_gpu_row_keeps_the_cheapest_available_offer_per_pricing_and_its_seller():
    rows = gpu_rows(
        [
            offer("H100-80GB", "lambda", "on_demand", 2.49, available=False, form="SXM"),
            offer("H100-80GB", "runpod", "on_demand", 2.99, form="SXM"),
            offer("H100-80GB", "vastai", "on_demand", 3.10, form="SXM"),
            offer("H100-80GB", "vastai", "spot", 1.20, form="SXM"),
            offer("H100-80GB", "lambda", "on_demand", 1.99, form="PCIe"),
        ],
        past={},
    )
    by_form = {row.form_factor: row for row in rows}
    assert set(by_form) == {"SXM", "PCIe"}  # never merged
    sxm = by_form["SXM"]
    assert (sxm.on_demand.price_per_gpu_hour, sxm.on_demand.provider) == (2.99, "runpod")
    assert (sxm.spot.price_per_gpu_hour, sxm.spot.provider) == (1.20, "vastai")
    assert sxm.available_offers == 3 and sxm.label == "H100-80GB SXM"
    assert by_form["PCIe"].spot is None


def test_the_change_compares_on_demand_and_falls_back_to_spot():
    past = {
        "24h": {("A100-80GB", None, "on_demand"): 2.0, ("RTX 4090", None, "spot"): 0.5},
        "7d": {},
    }
    rows = gpu_rows(
        [
            offer("A100-80GB", "runpod", "on_demand", 1.5),
            offer("A100-80GB", "vastai", "spot", 0.9),
            offer("RTX 4090", "vastai", "spot", 0.4, vram=24.0),
        ],
        past,
    )
    changes = {row.gpu: row.changes for row in rows}
    assert changes["A100-80GB"]["24h"].fraction == pytest.approx(-0.25)
    assert changes["RTX 4090"]["24h"].pricing == "spot"
    assert changes["RTX 4090"]["24h"].fraction == pytest.approx(-0.2)
    assert changes["A100-80GB"]["7d"] is None


def test_most_memory_comes_first_and_price_orders_put_gpus_without_that_pricing_last():
    rows = gpu_rows(
        [
            offer("RTX 3070", "vastai", "on_demand", 0.05, vram=8.0),
            offer("H200", "lambda", "on_demand", 3.5, vram=141.0),
            offer("H100-80GB", "runpod", "spot", 1.1, vram=80.0),
            offer(None, "vastai", "on_demand", 0.2, vram=None),
        ],
        past={},
    )
    assert [r.label for r in sort_gpu_rows(rows, "vram")] == [
        "H200", "H100-80GB", "RTX 3070", "Mystery 9000 (unknown)",
    ]  # fmt: skip
    assert [r.gpu for r in sort_gpu_rows(rows, "price")][:3] == ["RTX 3070", None, "H200"]
    assert sort_gpu_rows(rows, "spot")[0].gpu == "H100-80GB"
