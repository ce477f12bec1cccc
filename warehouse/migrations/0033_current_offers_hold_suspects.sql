-- An unconfirmed price outlier (`price_outliers.suspect`: flagged in its run and not in the
-- provider's previous run on the same side) is held out of `current_offers` until a second run
-- in a row confirms it: so out of every answer read from it at once (`/offers` and the page,
-- the cheapest first, quotes, `/metrics`, alerts), as it was already out of the index roll-up
-- (warehouse/quality.py `SUSPECT_IN_BATCH`, the same condition on the batch being stored). It
-- stays in `offer_observations` and is listed by `/quality` with `suspect = true`.
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
