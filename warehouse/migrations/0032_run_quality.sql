-- Issue 32: every provider run's quality, kept and compared (pipeline/collection/quality.py).
-- Numbered after the issue so that migrations merged in parallel keep their own numbers; the
-- warehouse applies versions it has not seen, whatever their order.

CREATE TABLE run_quality (
    run_id            VARCHAR NOT NULL,
    provider          VARCHAR NOT NULL,
    observed_at       TIMESTAMPTZ NOT NULL,
    state             VARCHAR NOT NULL,  -- 'ok' | 'failed' | 'not_configured'
    offer_count       INTEGER NOT NULL,
    resolved_count    INTEGER NOT NULL,  -- offers whose GPU resolved to a catalog id
    reject_count      INTEGER NOT NULL,
    unknown_names     INTEGER NOT NULL,  -- distinct GPU spellings that resolved to nothing
    shape_json        VARCHAR,           -- the answer's field paths (JSON list); null: not read
    fields_added      VARCHAR,           -- JSON list, against the previous good run
    fields_missing    VARCHAR,           -- JSON list, against the previous good run
    degraded          BOOLEAN NOT NULL,
    reasons           VARCHAR            -- JSON list of why the run is degraded
);

CREATE TABLE run_unknown_gpus (
    run_id       VARCHAR NOT NULL,
    provider     VARCHAR NOT NULL,
    gpu_raw      VARCHAR NOT NULL,
    offer_count  INTEGER NOT NULL,
    example      VARCHAR NOT NULL        -- one offer_id carrying the spelling
);

CREATE TABLE run_reject_reasons (
    run_id    VARCHAR NOT NULL,
    provider  VARCHAR NOT NULL,
    reason    VARCHAR NOT NULL,
    records   INTEGER NOT NULL
);

CREATE TABLE price_outliers (
    run_id               VARCHAR NOT NULL,
    provider             VARCHAR NOT NULL,
    offer_id             VARCHAR NOT NULL,
    pricing              VARCHAR NOT NULL,
    gpu                  VARCHAR NOT NULL,
    price_per_gpu_hour   DOUBLE NOT NULL,
    median_per_gpu_hour  DOUBLE NOT NULL,
    side                 VARCHAR NOT NULL,  -- 'low' | 'high'
    suspect              BOOLEAN NOT NULL,  -- a low outlier not flagged in the provider's previous run
    observed_at          TIMESTAMPTZ NOT NULL
);
