-- The price index, methodology v1 (issue 24; README "Price index"). Per bucket (1 h, 1 d, UTC)
-- each provider contributes the cheapest available USD per GPU-hour of its last good snapshot in
-- the bucket; the index is the median of those contributions.
--
-- Summaries keep the offer that gave the cheapest available price, so a value stays explainable
-- once raw observations are pruned. Rows whose raw observations are still kept get it now.
ALTER TABLE price_summaries ADD COLUMN min_available_offer_id VARCHAR;

UPDATE price_summaries AS s SET min_available_offer_id = r.offer_id
FROM (
    SELECT run_id, gpu, form_factor, pricing,
           arg_min(offer_id, price_per_gpu_hour) FILTER (WHERE available) AS offer_id
    FROM offer_observations WHERE gpu IS NOT NULL
    GROUP BY run_id, gpu, form_factor, pricing
) AS r
WHERE s.run_id = r.run_id AND s.gpu = r.gpu AND s.pricing = r.pricing
  AND s.form_factor IS NOT DISTINCT FROM r.form_factor;

-- One row per (interval, bucket, provider, GPU, form factor, pricing): the provider's last good
-- snapshot in the bucket. Kept up to date at ingest (one DELETE + one INSERT per provider run,
-- in the run's transaction); `price_per_gpu_hour` is NULL when that snapshot listed the GPU but
-- had none available. Read by /index, /index/explain, /market and index alerts.
CREATE TABLE index_rollups (
    bucket_interval     VARCHAR NOT NULL,   -- '1h' | '1d'
    t                   TIMESTAMPTZ NOT NULL,
    provider            VARCHAR NOT NULL,
    run_id              VARCHAR NOT NULL,
    observed_at         TIMESTAMPTZ NOT NULL,
    gpu                 VARCHAR NOT NULL,
    form_factor         VARCHAR,
    pricing             VARCHAR NOT NULL,
    price_per_gpu_hour  DOUBLE,
    offer_id            VARCHAR
);

INSERT INTO index_rollups BY NAME
WITH last_runs AS (
    SELECT i.bucket_interval, time_bucket(i.width, r.observed_at) AS t, r.provider,
           arg_max(r.run_id, {'observed': r.observed_at, 'finished': r.finished_at}) AS run_id
    FROM collection_runs AS r,
         (VALUES ('1h', INTERVAL 1 HOUR), ('1d', INTERVAL 1 DAY)) AS i(bucket_interval, width)
    WHERE r.status = 'ok'
    GROUP BY ALL
)
SELECT l.bucket_interval, l.t, s.provider, s.run_id, s.observed_at, s.gpu, s.form_factor,
       s.pricing, s.min_available_price AS price_per_gpu_hour,
       s.min_available_offer_id AS offer_id
FROM last_runs AS l JOIN price_summaries AS s USING (run_id)
ORDER BY l.t;

-- `/prices/history` at 1 h and 1 d: one row per (interval, bucket, GPU, form factor, provider,
-- pricing) with the bucket statistics of warehouse/history.py over the bucket's snapshot
-- summaries. Recomputed for a run's hour and day at ingest (one DELETE + one INSERT per provider
-- run, in its transaction), so a year of hourly history reads 52k rows, not 2.4 M summaries.
CREATE TABLE history_rollups (
    bucket_interval  VARCHAR NOT NULL,   -- '1h' | '1d'
    t                TIMESTAMPTZ NOT NULL,
    gpu              VARCHAR NOT NULL,
    form_factor      VARCHAR,
    provider         VARCHAR NOT NULL,
    pricing          VARCHAR NOT NULL,
    "min"            DOUBLE NOT NULL,
    min_available    DOUBLE,
    p25              DOUBLE NOT NULL,
    median           DOUBLE NOT NULL,
    "max"            DOUBLE NOT NULL,
    offers           INTEGER NOT NULL,
    available        INTEGER NOT NULL,
    snapshots        BIGINT NOT NULL,
    point_json       VARCHAR NOT NULL    -- the point as GET /prices/history sends it
);

INSERT INTO history_rollups BY NAME
SELECT *, CAST(to_json({
           't': strftime(make_timestamp(epoch_us(t)), '%Y-%m-%dT%H:%M:%SZ'),
           'min': min, 'min_available': min_available, 'p25': p25, 'median': median,
           'max': max, 'offers': offers, 'available': available, 'snapshots': snapshots
       }) AS VARCHAR) AS point_json
FROM (
    SELECT i.bucket_interval, time_bucket(i.width, observed_at) AS t,
           gpu, form_factor, provider, pricing,
           min(min_price) AS min, min(min_available_price) AS min_available,
           median(p25_price) AS p25, median(median_price) AS median, max(max_price) AS max,
           CAST(round(avg(offer_count)) AS INTEGER) AS offers,
           CAST(round(avg(available_count)) AS INTEGER) AS available,
           count(*) AS snapshots
    FROM price_summaries,
         (VALUES ('1h', INTERVAL 1 HOUR), ('1d', INTERVAL 1 DAY)) AS i(bucket_interval, width)
    GROUP BY ALL
)
ORDER BY t;
