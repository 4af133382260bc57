//! Environment sessions' rows: each client's interactive campaign, and an episode row per
//! session, opened already leased by the server that runs it.
//!
//! An interactive campaign is never scheduled ([`Store::campaigns_with_status`] leaves
//! them out) and its episodes are never handed back to a queue: a session's actions come
//! from its client, so an episode whose server died cannot be run again by anyone. It is
//! failed instead ([`Store::fail_lost_sessions`]).

use std::time::Duration;

use uuid::Uuid;

use crate::state::{EpisodeStatus, Status};
use crate::{Store, StoreError};

/// Why an episode whose session's server stopped is failed.
pub const LOST_SESSION: &str = "the server running this session stopped";

impl Store {
    /// Creates the interactive campaign `id` if it does not exist (running, no planned
    /// episodes: each session adds its own).
    pub async fn ensure_interactive_campaign(
        &self,
        id: Uuid,
        name: &str,
        policy: &str,
        config: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO campaigns (id, name, status, policy, config, total_episodes, interactive, started_at)
             VALUES ($1, $2, $5, $3, $4, 0, true, now())
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(name)
        .bind(policy)
        .bind(config)
        .bind(Status::Running)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Whether campaign `id` is interactive (`None`: no such campaign).
    pub async fn campaign_is_interactive(&self, id: Uuid) -> Result<Option<bool>, StoreError> {
        let row: Option<(bool,)> =
            sqlx::query_as("SELECT interactive FROM campaigns WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(b,)| b))
    }

    /// Adds a session's episode to an interactive campaign, running and leased by
    /// `owner` for `lease`: the campaign's row numbers it (its rollout), so concurrent
    /// sessions of one task never collide.
    pub async fn open_session_episode(
        &self,
        campaign: Uuid,
        task_id: &str,
        seed: i64,
        owner: &str,
        lease: Duration,
    ) -> Result<Uuid, StoreError> {
        let mut tx = self.pool.begin().await?;
        let (n,): (i32,) = sqlx::query_as(
            "UPDATE campaigns SET total_episodes = total_episodes + 1
             WHERE id = $1 AND interactive RETURNING total_episodes",
        )
        .bind(campaign)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| StoreError::Conflict(format!("campaign {campaign} is not interactive")))?;
        let id = Uuid::new_v4();
        sqlx::query(
            "INSERT INTO episodes (id, campaign_id, task_id, rollout, seed, status, lease_owner,
                lease_expires_at, attempts, started_at)
             VALUES ($1, $2, $3, $4, $5, $8, $6, now() + make_interval(secs => $7), 1, now())",
        )
        .bind(id)
        .bind(campaign)
        .bind(task_id)
        .bind(n - 1)
        .bind(seed)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .bind(EpisodeStatus::Running)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Fails the episodes of sessions whose server stopped without ending them (their
    /// lease expired): nobody can run them again. Returns how many.
    pub async fn fail_lost_sessions(&self) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = $2, last_error = $1, finished_at = now(),
                lease_owner = NULL, lease_expires_at = NULL
             WHERE status = $3 AND lease_expires_at < now()
               AND campaign_id IN (SELECT id FROM campaigns WHERE interactive)",
        )
        .bind(LOST_SESSION)
        .bind(EpisodeStatus::Failed)
        .bind(EpisodeStatus::Running)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}
