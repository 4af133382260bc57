-- Numbered 0017: 0016 is taken by the API tokens (branch auth), merged separately.
-- Training runs created through the API are executed by a server (`surfgym serve`) that
-- claims them with a lease, so a restarted or replaced server takes over a run its
-- predecessor held. Runs started by `surfgym train run` stay with that process
-- (managed = false) and are never claimed.
ALTER TABLE training_runs DROP CONSTRAINT training_runs_state_check;
ALTER TABLE training_runs ADD CONSTRAINT training_runs_state_check
    CHECK (state IN ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled'));
ALTER TABLE training_runs ADD COLUMN managed boolean NOT NULL DEFAULT false;
ALTER TABLE training_runs ADD COLUMN lease_owner text;
ALTER TABLE training_runs ADD COLUMN lease_until timestamptz;
CREATE INDEX training_runs_claimable ON training_runs (created_at) WHERE managed;
