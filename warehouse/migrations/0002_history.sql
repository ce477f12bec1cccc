-- Current snapshot per provider, replaced in the ingest transaction: /offers reads ~thousands of
-- rows instead of scanning a year of observations.
CREATE TABLE current_offers AS SELECT * FROM offer_observations LIMIT 0;

INSERT INTO current_offers
SELECT * FROM offer_observations
WHERE run_id IN (
    SELECT run_id FROM collection_runs WHERE status = 'ok'
    QUALIFY row_number() OVER (
        PARTITION BY provider ORDER BY observed_at DESC, finished_at DESC
    ) = 1
);

-- One row per successful run, GPU and pricing, built at ingest in the run's transaction and kept
-- forever (raw observations are pruned after the retention window). Prices are USD per GPU-hour
-- over every listed offer of the snapshot; `available_count` counts those rentable now.
CREATE TABLE price_summaries (
    run_id           VARCHAR NOT NULL,
    provider         VARCHAR NOT NULL,
    observed_at      TIMESTAMPTZ NOT NULL,
    gpu              VARCHAR NOT NULL,
    pricing          VARCHAR NOT NULL,
    min_price        DOUBLE NOT NULL,
    p25_price        DOUBLE NOT NULL,
    median_price     DOUBLE NOT NULL,
    max_price        DOUBLE NOT NULL,
    offer_count      INTEGER NOT NULL,
    available_count  INTEGER NOT NULL
);

INSERT INTO price_summaries
SELECT run_id, provider, observed_at, gpu, pricing,
       min(price_per_gpu_hour), quantile_cont(price_per_gpu_hour, 0.25),
       quantile_cont(price_per_gpu_hour, 0.5), max(price_per_gpu_hour),
       count(*), count(*) FILTER (WHERE available)
FROM offer_observations
WHERE gpu IS NOT NULL
GROUP BY run_id, provider, observed_at, gpu, pricing
ORDER BY observed_at;
