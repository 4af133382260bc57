-- Environments such as MiniWoB++ generate the instruction per episode (from its seed).
ALTER TABLE episodes ADD COLUMN instruction text;
-- ... and may end an episode themselves.
ALTER TABLE episodes DROP CONSTRAINT episodes_end_reason_check;
ALTER TABLE episodes ADD CONSTRAINT episodes_end_reason_check
    CHECK (end_reason IN ('answered', 'stopped', 'max_steps', 'policy_error', 'timeout', 'env_done'));
