-- Why a rule's last evaluation failed (issue 18): a rule that cannot be evaluated is skipped, the
-- others go on. Null while the rule evaluates fine; cleared by the next evaluation that succeeds.
ALTER TABLE alert_rules ADD COLUMN evaluation_error VARCHAR;
ALTER TABLE alert_rules ADD COLUMN evaluation_error_at TIMESTAMPTZ;
