-- Summaries keep SXM and PCIe apart and know the cheapest offer rentable now (issue 22): the
-- chart draws the minimum over available offers, per form factor. `min_available_price` is NULL
-- when no offer of the group was available (or, for old rows, when that is unknown).
ALTER TABLE price_summaries ADD COLUMN form_factor VARCHAR;
ALTER TABLE price_summaries ADD COLUMN min_available_price DOUBLE;

-- Runs whose raw observations are still kept (the retention window) are summarised again with
-- both; older summaries keep form_factor NULL, and their available minimum is known only where
-- every listed offer was available (then it is the minimum itself).
DELETE FROM price_summaries WHERE run_id IN (SELECT DISTINCT run_id FROM offer_observations);

INSERT INTO price_summaries BY NAME
SELECT run_id, provider, observed_at, gpu, form_factor, pricing,
       min(price_per_gpu_hour) AS min_price,
       quantile_cont(price_per_gpu_hour, 0.25) AS p25_price,
       quantile_cont(price_per_gpu_hour, 0.5) AS median_price,
       max(price_per_gpu_hour) AS max_price,
       count(*) AS offer_count,
       count(*) FILTER (WHERE available) AS available_count,
       min(price_per_gpu_hour) FILTER (WHERE available) AS min_available_price
FROM offer_observations
WHERE gpu IS NOT NULL
GROUP BY run_id, provider, observed_at, gpu, form_factor, pricing
ORDER BY observed_at;

UPDATE price_summaries SET min_available_price = min_price
WHERE min_available_price IS NULL AND form_factor IS NULL AND available_count = offer_count;
