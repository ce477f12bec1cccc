-- `/prices/history` at 1 h and 1 d over long spans (issue 24, item 7): one row per UTC day and
-- series (GPU, form factor, provider, pricing) with that day's points as the API sends them,
-- `day_json` its 1 d point and `hours_json` its 1 h points in time order, comma-joined (both
-- from `history_rollups`). A year of hourly points of one GPU is then 365 rows per series, not
-- 8,760 hourly rows scattered among every GPU's and interval's. Rewritten for the run's day at
-- ingest, after its rollups (one DELETE + one INSERT per provider run, in its transaction).
-- `points_hash` names the row's content: a server keeps the JSON of a day it has read and reads
-- only the hashes again while they are unchanged.
CREATE TABLE history_days (
    day          TIMESTAMPTZ NOT NULL,
    gpu          VARCHAR NOT NULL,
    form_factor  VARCHAR,
    provider     VARCHAR NOT NULL,
    pricing      VARCHAR NOT NULL,
    day_json     VARCHAR NOT NULL,
    hours_json   VARCHAR NOT NULL,
    points_hash  BIGINT NOT NULL
);

INSERT INTO history_days BY NAME
SELECT d.t AS day, d.gpu, d.form_factor, d.provider, d.pricing, d.point_json AS day_json,
       h.hours_json, CAST(hash(d.point_json, h.hours_json) >> 1 AS BIGINT) AS points_hash
FROM history_rollups AS d
JOIN (
    SELECT make_timestamptz(epoch_us(time_bucket(INTERVAL 1 DAY, make_timestamp(epoch_us(t)))))
               AS day,
           gpu, form_factor, provider, pricing,
           string_agg(point_json, ',' ORDER BY t) AS hours_json
    FROM history_rollups WHERE bucket_interval = '1h'
    GROUP BY ALL
) AS h ON h.day = d.t AND h.gpu = d.gpu AND h.provider = d.provider AND h.pricing = d.pricing
      AND h.form_factor IS NOT DISTINCT FROM d.form_factor
WHERE d.bucket_interval = '1d'
ORDER BY day;
