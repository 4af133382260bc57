-- How long judging an episode took (rules and model calls), so the dashboard can show the
-- judge beside observe / policy / act in a campaign's latency breakdown. NULL for
-- episodes stored before it was recorded.
ALTER TABLE episodes ADD COLUMN judge_ms integer;
