-- Alert rules, their edge state, and the webhook outbox with every delivery attempt.
-- DuckLake-compatible: no PRIMARY KEY/UNIQUE, no sequences, no indexes; ids come from the app.

CREATE TABLE alert_rules (
    rule_id          VARCHAR NOT NULL,      -- 'alr_' + 24 hex
    kind             VARCHAR NOT NULL,      -- 'price' | 'availability' | 'workload'
    url              VARCHAR NOT NULL,      -- the webhook target
    secret           VARCHAR NOT NULL,      -- 'whsec_...': shown once at creation, never again
    condition_json   VARCHAR NOT NULL,      -- filters and threshold, as JSON
    band             DOUBLE NOT NULL,       -- hysteresis, in the threshold's unit
    cooldown_s       DOUBLE NOT NULL,       -- no second fire within this many seconds
    created_at       TIMESTAMPTZ NOT NULL,
    disabled_at      TIMESTAMPTZ,           -- set when the endpoint answered 410 Gone
    disabled_reason  VARCHAR
);

CREATE TABLE alert_state (
    rule_id          VARCHAR NOT NULL,
    armed            BOOLEAN NOT NULL,      -- may fire the next time the condition holds
    last_value       DOUBLE,                -- lowest price / best cost / places available
    places_json      VARCHAR,               -- availability: places already known available
    last_fired_at    TIMESTAMPTZ,
    evaluated_at     TIMESTAMPTZ NOT NULL
);

CREATE TABLE alert_deliveries (
    delivery_id      VARCHAR NOT NULL,      -- 'msg_...': the webhook-id, the same on every retry
    rule_id          VARCHAR NOT NULL,
    event_type       VARCHAR NOT NULL,      -- 'price.below' | 'gpu.available' | ...
    body             VARCHAR NOT NULL,      -- the JSON body, fixed when the event was stored
    status           VARCHAR NOT NULL,      -- 'pending' | 'delivered' | 'failed' | 'cancelled'
    attempts         INTEGER NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    next_attempt_at  TIMESTAMPTZ,           -- when pending: not before (also a sender's lease)
    finished_at      TIMESTAMPTZ,
    last_error       VARCHAR
);

CREATE TABLE alert_attempts (
    delivery_id      VARCHAR NOT NULL,
    rule_id          VARCHAR NOT NULL,
    attempt          INTEGER NOT NULL,      -- 1, 2, ...
    attempted_at     TIMESTAMPTZ NOT NULL,
    status_code      INTEGER,               -- null when no response (timeout, refused, ...)
    latency_ms       DOUBLE NOT NULL,
    outcome          VARCHAR NOT NULL,      -- 'delivered' | 'retry' | 'failed' | 'gone'
    error            VARCHAR
);
