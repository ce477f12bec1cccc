-- Aggregators (Shadeform, Prime Intellect) resell other clouds' GPUs: `seller` names the cloud
-- behind an aggregator's offer (one of our provider names where one exists), NULL when the
-- provider sells it itself. `current_offers` is recreated unchanged (as in 0033) so that its
-- `o.*` includes the new column.
ALTER TABLE offer_observations ADD COLUMN seller VARCHAR;

DROP VIEW current_offers;

CREATE VIEW current_offers AS
WITH newest AS (
    SELECT provider, max(observed_at) AS observed_at FROM collection_runs
    WHERE status = 'ok' GROUP BY provider
),
snapshots AS (
    SELECT arg_max(run_id, finished_at) AS run_id, observed_at
    FROM collection_runs SEMI JOIN newest USING (provider, observed_at)
    WHERE status = 'ok' GROUP BY provider, observed_at
),
suspects AS (
    SELECT DISTINCT run_id, offer_id, pricing FROM price_outliers WHERE suspect
)
SELECT o.* FROM offer_observations AS o
SEMI JOIN snapshots USING (run_id, observed_at)
ANTI JOIN suspects USING (run_id, offer_id, pricing);
