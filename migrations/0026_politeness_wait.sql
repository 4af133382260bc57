-- How long an episode waited for a session slot on its start domain (politeness per
-- domain, `--per-domain-sessions`): null where the pool capped nothing.
ALTER TABLE episodes ADD COLUMN politeness_ms integer;
