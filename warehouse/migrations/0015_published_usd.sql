-- The USD figure a provider publishes beside a price in another currency (Hetzner): never the
-- price (that is the ECB conversion), kept to check the conversion against (issue 23).
ALTER TABLE offer_observations ADD COLUMN published_usd_per_hour DOUBLE;
ALTER TABLE current_offers ADD COLUMN published_usd_per_hour DOUBLE;
