//! Leases on episodes: a runner claims one, keeps it with heartbeats and gives it back
//! after an infrastructure failure; `SKIP LOCKED` keeps two runners off one episode.

use std::time::Duration;

use uuid::Uuid;

use crate::state::{EpisodeStatus, Status};
use crate::{Store, StoreError};

/// An episode a runner has leased.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedEpisode {
    /// Identifier.
    pub id: Uuid,
    /// Task to run.
    pub task_id: String,
    /// Rollout index.
    pub rollout: i32,
    /// Policy seed.
    pub seed: i64,
    /// Attempts so far, this one included.
    pub attempts: i32,
    /// Why the previous attempt failed, if one did.
    pub last_error: Option<String>,
}

impl Store {
    /// Leases the next runnable episode of a campaign, longest expected first: pending
    /// ones, and running ones whose lease expired (their runner died). `SKIP LOCKED` lets any number of runners claim
    /// concurrently without handing one episode to two of them.
    pub async fn claim_episode(
        &self,
        campaign: Uuid,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<ClaimedEpisode>, StoreError> {
        Ok(sqlx::query_as(
            "UPDATE episodes e SET status = $4, lease_owner = $2,
                lease_expires_at = now() + make_interval(secs => $3), attempts = e.attempts + 1,
                started_at = now()
             WHERE e.id = (
                SELECT p.id FROM episodes p JOIN tasks t ON t.id = p.task_id
                WHERE p.campaign_id = $1
                  AND (p.status = $5 OR (p.status = $4 AND p.lease_expires_at < now()))
                -- Longest expected first (a task's step limit is the proxy): long episodes
                -- started last would otherwise run alone at the end of the campaign.
                ORDER BY coalesce((t.spec->>'max_steps')::int, 15) DESC, p.rollout, p.task_id
                FOR UPDATE OF p SKIP LOCKED
                LIMIT 1)
             RETURNING e.id, e.task_id, e.rollout, e.seed, e.attempts, e.last_error",
        )
        .bind(campaign)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .bind(EpisodeStatus::Running)
        .bind(EpisodeStatus::Pending)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Extends a lease; false when the runner no longer holds it.
    pub async fn heartbeat(
        &self,
        episode: Uuid,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET lease_expires_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2 AND status = $4",
        )
        .bind(episode)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .bind(EpisodeStatus::Running)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives an episode back after an infrastructure failure: to `pending` for a retry (or
    /// `cancelled` when its campaign was cancelled meanwhile: nobody would retry it), or
    /// to `failed` when the runner gives up. Either way the reason is recorded and nothing
    /// is scored.
    pub async fn release_episode(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        give_up: bool,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = CASE WHEN $4 THEN $6::text
                    WHEN c.status = $7 THEN $8::text ELSE $9::text END,
                last_error = $3, lease_owner = NULL, lease_expires_at = NULL,
                finished_at = CASE WHEN $4 OR c.status = $7 THEN now() ELSE NULL END
             FROM campaigns c
             WHERE episodes.id = $1 AND episodes.lease_owner = $2 AND episodes.status = $5
               AND c.id = episodes.campaign_id",
        )
        .bind(id)
        .bind(owner)
        .bind(error)
        .bind(give_up)
        .bind(EpisodeStatus::Running)
        .bind(EpisodeStatus::Failed)
        .bind(Status::Cancelled)
        .bind(EpisodeStatus::Cancelled)
        .bind(EpisodeStatus::Pending)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Hands back every episode `owner` still leases, as if never started: pending again
    /// (cancelled if its campaign was), lease cleared, the attempt not counted, since the
    /// runner stopped on purpose rather than failed. Nothing of such an episode was stored
    /// (an episode is stored whole, in one fenced transaction), so a retry duplicates
    /// nothing. Returns how many.
    pub async fn hand_back_leases(&self, owner: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET
                status = CASE WHEN c.status = $3 THEN $4::text ELSE $5::text END,
                attempts = greatest(episodes.attempts - 1, 0),
                lease_owner = NULL, lease_expires_at = NULL, started_at = NULL,
                finished_at = CASE WHEN c.status = $3 THEN now() ELSE NULL END
             FROM campaigns c
             WHERE episodes.lease_owner = $1 AND episodes.status = $2
               AND c.id = episodes.campaign_id AND NOT c.interactive",
        )
        .bind(owner)
        .bind(EpisodeStatus::Running)
        .bind(Status::Cancelled)
        .bind(EpisodeStatus::Cancelled)
        .bind(EpisodeStatus::Pending)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Ends every still-pending episode of a campaign as `failed` with a reason (a
    /// straggler cut-off: never started, so never scored). Returns how many.
    pub async fn fail_pending(&self, campaign: Uuid, reason: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = $3, last_error = $2, finished_at = now()
             WHERE campaign_id = $1 AND status = $4",
        )
        .bind(campaign)
        .bind(reason)
        .bind(EpisodeStatus::Failed)
        .bind(EpisodeStatus::Pending)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Ends a cancelled campaign's episodes that will not run: pending ones, and running
    /// ones whose lease expired (their runner died). Episodes still leased end as their
    /// runner leaves them ([`Store::release_episode`] cancels them rather than retrying).
    /// Returns how many.
    pub async fn cancel_unrun(&self, campaign: Uuid) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = $2, finished_at = now(),
                lease_owner = NULL, lease_expires_at = NULL
             WHERE campaign_id = $1
               AND (status = $3 OR (status = $4 AND lease_expires_at < now()))",
        )
        .bind(campaign)
        .bind(EpisodeStatus::Cancelled)
        .bind(EpisodeStatus::Pending)
        .bind(EpisodeStatus::Running)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}
