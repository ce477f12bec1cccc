-- DuckLake-compatible: no PRIMARY KEY/UNIQUE, no sequences, no indexes; ids come from the app.

CREATE TABLE collection_runs (
    run_id          VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ NOT NULL,
    observed_at     TIMESTAMPTZ NOT NULL,
    status          VARCHAR NOT NULL,       -- 'ok' | 'failed'
    offer_count     INTEGER NOT NULL,
    reject_count    INTEGER NOT NULL,
    error           VARCHAR,
    source          VARCHAR NOT NULL        -- the URL fetched, or 'replay:<file>'
);

CREATE TABLE offer_observations (
    run_id              VARCHAR NOT NULL,
    provider            VARCHAR NOT NULL,
    offer_id            VARCHAR NOT NULL,
    gpu                 VARCHAR,
    gpu_raw             VARCHAR NOT NULL,
    form_factor         VARCHAR,
    gpu_count           INTEGER NOT NULL,
    vram_gb             DOUBLE,
    pricing             VARCHAR NOT NULL,
    price_per_hour      DOUBLE NOT NULL,
    price_per_gpu_hour  DOUBLE NOT NULL,
    price_quoted_per    VARCHAR NOT NULL,
    region              VARCHAR,
    available           BOOLEAN NOT NULL,
    observed_at         TIMESTAMPTZ NOT NULL,
    vcpus               DOUBLE,
    ram_gb              DOUBLE,
    disk_gb             DOUBLE,
    verified            BOOLEAN,
    tier                VARCHAR,
    reliability         DOUBLE
);

CREATE TABLE quarantine (
    run_id       VARCHAR NOT NULL,
    provider     VARCHAR NOT NULL,
    record_id    VARCHAR,
    reason       VARCHAR NOT NULL,
    raw          VARCHAR NOT NULL,
    observed_at  TIMESTAMPTZ NOT NULL
);
