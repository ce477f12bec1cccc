-- Prices as published and their USD conversion (issue 23). Null on offers stored before: those
-- were USD, quoted as stored.
ALTER TABLE offer_observations ADD COLUMN currency VARCHAR;
ALTER TABLE offer_observations ADD COLUMN price_per_hour_native DOUBLE;
ALTER TABLE offer_observations ADD COLUMN fx_rate DOUBLE;
ALTER TABLE offer_observations ADD COLUMN fx_date DATE;
ALTER TABLE offer_observations ADD COLUMN setup_fee_native DOUBLE;
ALTER TABLE offer_observations ADD COLUMN setup_fee_usd DOUBLE;
ALTER TABLE offer_observations ADD COLUMN price_per_month_native DOUBLE;
ALTER TABLE offer_observations ADD COLUMN price_per_month_usd DOUBLE;
ALTER TABLE current_offers ADD COLUMN currency VARCHAR;
ALTER TABLE current_offers ADD COLUMN price_per_hour_native DOUBLE;
ALTER TABLE current_offers ADD COLUMN fx_rate DOUBLE;
ALTER TABLE current_offers ADD COLUMN fx_date DATE;
ALTER TABLE current_offers ADD COLUMN setup_fee_native DOUBLE;
ALTER TABLE current_offers ADD COLUMN setup_fee_usd DOUBLE;
ALTER TABLE current_offers ADD COLUMN price_per_month_native DOUBLE;
ALTER TABLE current_offers ADD COLUMN price_per_month_usd DOUBLE;

-- Reference exchange rates from a rate source (the ECB): `rate` units of `currency` per one unit
-- of `base` on `rate_date`. A date may be stored again by a later run; readers take the newest.
CREATE TABLE fx_rates (
    source       VARCHAR NOT NULL,
    base         VARCHAR NOT NULL,
    currency     VARCHAR NOT NULL,
    rate_date    DATE NOT NULL,
    rate         DOUBLE NOT NULL,
    run_id       VARCHAR NOT NULL,
    observed_at  TIMESTAMPTZ NOT NULL
);
