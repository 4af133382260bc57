-- A cancelled campaign's episodes that never ran end as `cancelled` (before, they stayed
-- `pending` for ever and the campaign looked unfinished).
ALTER TABLE episodes DROP CONSTRAINT episodes_status_check;
ALTER TABLE episodes ADD CONSTRAINT episodes_status_check
    CHECK (status IN ('pending', 'running', 'finished', 'failed', 'cancelled'));
-- Campaigns cancelled before this migration.
UPDATE episodes SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,
       finished_at = coalesce(finished_at, now())
 WHERE status IN ('pending', 'running')
   AND campaign_id IN (SELECT id FROM campaigns WHERE status = 'cancelled');
