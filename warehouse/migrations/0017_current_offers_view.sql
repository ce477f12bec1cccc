-- `current_offers` becomes a view of each provider's newest good snapshot in
-- `offer_observations`, instead of a second copy of it written in every run's transaction: that
-- copy doubled the rows a run compresses and writes (bench/ingest.py: ~0.8 s of a 2.5 s ingest
-- of 185,643 offers). The newest good snapshot is the same as before (newest `observed_at`, then
-- the last finished run at that time); the semi join on (run_id, observed_at) hands DuckDB the
-- snapshot times, which prune every row group of older observations. Retention keeps these runs'
-- observations however old (`history.prune_before`).
DROP TABLE current_offers;

CREATE VIEW current_offers AS
WITH newest AS (
    SELECT provider, max(observed_at) AS observed_at FROM collection_runs
    WHERE status = 'ok' GROUP BY provider
),
snapshots AS (
    SELECT arg_max(run_id, finished_at) AS run_id, observed_at
    FROM collection_runs SEMI JOIN newest USING (provider, observed_at)
    WHERE status = 'ok' GROUP BY provider, observed_at
)
SELECT o.* FROM offer_observations AS o SEMI JOIN snapshots USING (run_id, observed_at);
