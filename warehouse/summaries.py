"""The per-snapshot price summaries (`price_summaries`), as ingest and history rebuild them."""

from __future__ import annotations

__all__ = [
    "BUCKET_AGGREGATES",
    "COUNTED_ONCE",
    "POINT_JSON",
    "SUMMARISE_BATCH",
    "SUMMARY_AGGREGATES",
]

COUNTED_ONCE = """
    (seller IS NULL OR seller NOT IN (SELECT provider FROM collection_runs WHERE status = 'ok'))
"""
"""An offer counted in the cheapest available price of its snapshot (and so in the price index):
sold by its provider itself, or resold by an aggregator (Shadeform, Prime Intellect) for a seller
we do not collect directly (no good run of a provider of that name). A resale of a cloud we
collect is counted once, through that cloud's own offers; it stays listed with its `seller`."""

SUMMARY_AGGREGATES = f"""
    min(price_per_gpu_hour) AS min_price,
    quantile_cont(price_per_gpu_hour, 0.25) AS p25_price,
    quantile_cont(price_per_gpu_hour, 0.5) AS median_price,
    max(price_per_gpu_hour) AS max_price,
    count(*) AS offer_count,
    count(*) FILTER (WHERE available) AS available_count,
    min(price_per_gpu_hour) FILTER (WHERE available AND {COUNTED_ONCE}) AS min_available_price,
    arg_min(offer_id, price_per_gpu_hour) FILTER (WHERE available AND {COUNTED_ONCE})
        AS min_available_offer_id
"""
"""One snapshot's figures over its offers: ingest, history rebuilt from raw, bench/history.py."""

SUMMARISE_BATCH = f"""
    INSERT INTO price_summaries BY NAME
    SELECT run_id, provider, observed_at, gpu, form_factor, pricing, {SUMMARY_AGGREGATES}
    FROM offer_batch
    WHERE gpu IS NOT NULL
    GROUP BY run_id, provider, observed_at, gpu, form_factor, pricing
"""
"""Summaries of the run registered as `offer_batch`, in the run's transaction."""

BUCKET_AGGREGATES = """
    min(min_price) AS min, min(min_available_price) AS min_available,
    median(p25_price) AS p25, median(median_price) AS median, max(max_price) AS max,
    CAST(round(avg(offer_count)) AS INTEGER) AS offers,
    CAST(round(avg(available_count)) AS INTEGER) AS available,
    count(*) AS snapshots
"""
"""One history bucket's figures over its per-snapshot summaries: history and its rollups."""

POINT_JSON = """
    CAST(to_json({
        't': strftime(make_timestamp(epoch_us(t)), '%Y-%m-%dT%H:%M:%SZ'),
        'min': min, 'min_available': min_available, 'p25': p25, 'median': median, 'max': max,
        'offers': offers, 'available': available, 'snapshots': snapshots
    }) AS VARCHAR)
"""
"""One history point as the API's JSON, over a bucket row (`t`, then `BUCKET_AGGREGATES`'
names): kept with each rolled-up bucket, so a year of hourly points is a string join."""
