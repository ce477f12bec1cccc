-- Where the GPU is, derived from the provider's region by pipeline/location.py. Null = unknown.
ALTER TABLE offer_observations ADD COLUMN country VARCHAR;
ALTER TABLE offer_observations ADD COLUMN continent VARCHAR;
ALTER TABLE offer_observations ADD COLUMN eea BOOLEAN;
ALTER TABLE offer_observations ADD COLUMN eu BOOLEAN;
ALTER TABLE current_offers ADD COLUMN country VARCHAR;
ALTER TABLE current_offers ADD COLUMN continent VARCHAR;
ALTER TABLE current_offers ADD COLUMN eea BOOLEAN;
ALTER TABLE current_offers ADD COLUMN eu BOOLEAN;
