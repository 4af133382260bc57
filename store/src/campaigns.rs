//! Campaign rows and their episode accounting.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::{PolicyCard, Store, StoreError};
use crate::state::{EpisodeStatus, Status};

/// Episodes of a campaign by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CampaignCounts {
    /// Not started, or waiting for a retry.
    pub pending: i64,
    /// Leased by a runner.
    pub running: i64,
    /// Ran to an end and judged.
    pub finished: i64,
    /// Gave up after infrastructure failures.
    pub failed: i64,
    /// Never ran (or ran no more): their campaign was cancelled.
    pub cancelled: i64,
}

/// One policy a campaign's episodes ran under.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyUse {
    /// The policy, as the workers recorded it.
    pub card: PolicyCard,
    /// Finished episodes that ran under it.
    pub episodes: i64,
}

/// A campaign as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignView {
    /// Identifier.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Where it stands.
    pub status: Status,
    /// Policy name.
    pub policy: String,
    /// Its episodes are environment sessions driven by an API client (never scheduled).
    pub interactive: bool,
    /// The validated request.
    pub config: serde_json::Value,
    /// Episodes planned.
    pub total_episodes: i64,
    /// Episodes by status.
    pub counts: CampaignCounts,
    /// Finished episodes judged successful.
    pub successes: i64,
    /// successes / finished (those judged: not `judge_errors`), when any.
    pub success_rate: Option<f64>,
    /// Finished episodes whose rubric could not be evaluated (not scored).
    pub judge_errors: i64,
    /// Mean partial-credit score of finished episodes.
    pub mean_score: Option<f64>,
    /// Steps taken by finished episodes.
    pub steps: i64,
    /// (finished + failed) / total.
    pub progress: f64,
    /// Model-judge calls made by finished episodes: questions actually asked (the
    /// anti-hallucination and reference-answer calls included; cache hits and blocking
    /// pages are not calls).
    pub judge_calls: i64,
    /// Model facts in finished episodes' rubrics.
    pub judge_facts: i64,
    /// Calls an exhaustive judge makes on the same episodes (every fact in words, plus the
    /// anti-hallucination and reference-answer calls).
    pub judge_exhaustive_calls: i64,
    /// `judge_exhaustive_calls - judge_calls`: saved by the critic and early stopping (and
    /// the verdict cache).
    pub judge_calls_saved: i64,
    /// Why the campaign failed, if it did.
    pub error: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// First started.
    pub started_at: Option<DateTime<Utc>>,
    /// Ended.
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: Uuid,
    name: String,
    status: Status,
    policy: String,
    interactive: bool,
    config: serde_json::Value,
    total_episodes: i32,
    error: Option<String>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    pending: i64,
    running: i64,
    finished: i64,
    failed: i64,
    cancelled: i64,
    successes: i64,
    judge_errors: i64,
    mean_score: Option<f64>,
    steps: i64,
    judge_calls: i64,
    judge_facts: i64,
    judge_exhaustive_calls: i64,
}

// The counts and sums come from `campaign_stats`, kept by triggers as episodes are
// written (migration 0019): reading a campaign costs the same whatever its size, and the
// list whatever the history's.
const SELECT: &str =
    "SELECT c.id, c.name, c.status, c.policy, c.interactive, c.config, c.total_episodes, c.error,
        c.created_at, c.started_at, c.finished_at,
        coalesce(s.pending, 0) AS pending,
        coalesce(s.running, 0) AS running,
        coalesce(s.finished, 0) AS finished,
        coalesce(s.failed, 0) AS failed,
        coalesce(s.cancelled, 0) AS cancelled,
        coalesce(s.successes, 0) AS successes,
        coalesce(s.judge_errors, 0) AS judge_errors,
        (s.score_sum / nullif(s.scored, 0))::float8 AS mean_score,
        coalesce(s.steps, 0) AS steps,
        coalesce(s.judge_calls, 0) AS judge_calls,
        coalesce(s.judge_facts, 0) AS judge_facts,
        coalesce(s.judge_exhaustive_calls, 0) AS judge_exhaustive_calls
    FROM campaigns c LEFT JOIN campaign_stats s ON s.campaign_id = c.id";

impl From<Row> for CampaignView {
    fn from(r: Row) -> CampaignView {
        let total = i64::from(r.total_episodes);
        CampaignView {
            id: r.id,
            name: r.name,
            status: r.status,
            policy: r.policy,
            interactive: r.interactive,
            config: r.config,
            total_episodes: total,
            counts: CampaignCounts {
                pending: r.pending,
                running: r.running,
                finished: r.finished,
                failed: r.failed,
                cancelled: r.cancelled,
            },
            successes: r.successes,
            // Episodes whose rubric failed were not scored: they count for neither side.
            success_rate: (r.finished > r.judge_errors)
                .then(|| r.successes as f64 / (r.finished - r.judge_errors) as f64),
            judge_errors: r.judge_errors,
            mean_score: r.mean_score,
            steps: r.steps,
            judge_calls: r.judge_calls,
            judge_facts: r.judge_facts,
            judge_exhaustive_calls: r.judge_exhaustive_calls,
            judge_calls_saved: r.judge_exhaustive_calls - r.judge_calls,
            progress: if total > 0 {
                (r.finished + r.failed) as f64 / total as f64
            } else {
                1.0
            },
            error: r.error,
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
        }
    }
}

/// One planned episode: task, rollout index, seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEpisode {
    /// Task id.
    pub task_id: String,
    /// Rollout index within the task.
    pub rollout: i32,
    /// Seed for the policy.
    pub seed: i64,
}

impl Store {
    /// Creates a queued campaign and all its episode rows, in one transaction.
    pub async fn create_campaign(
        &self,
        id: Uuid,
        name: &str,
        policy: &str,
        config: &serde_json::Value,
        episodes: &[PlannedEpisode],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO campaigns (id, name, status, policy, config, total_episodes) VALUES ($1, $2, $6, $3, $4, $5)",
        )
        .bind(id)
        .bind(name)
        .bind(policy)
        .bind(config)
        .bind(i32::try_from(episodes.len()).map_err(|_| StoreError::Conflict("too many episodes".into()))?)
        .bind(Status::Queued)
        .execute(&mut *tx)
        .await?;
        // Postgres takes at most 65535 binds per statement: 6 per row.
        for chunk in episodes.chunks(10_000) {
            let mut q = QueryBuilder::new(
                "INSERT INTO episodes (id, campaign_id, task_id, rollout, seed, status) ",
            );
            q.push_values(chunk, |mut b, e| {
                b.push_bind(Uuid::new_v4())
                    .push_bind(id)
                    .push_bind(&e.task_id)
                    .push_bind(e.rollout)
                    .push_bind(e.seed)
                    .push_bind(EpisodeStatus::Pending);
            });
            q.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// One campaign with its counts.
    pub async fn get_campaign(&self, id: Uuid) -> Result<Option<CampaignView>, StoreError> {
        let row: Option<Row> = sqlx::query_as(&format!("{SELECT} WHERE c.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(Into::into))
    }

    /// The policies a campaign's finished episodes ran under, each with how many, most
    /// used first. More than one means workers resolved its policy name to different
    /// models or settings: its data mixes policies.
    pub async fn campaign_policies(&self, id: Uuid) -> Result<Vec<PolicyUse>, StoreError> {
        let rows: Vec<(serde_json::Value, i64)> = sqlx::query_as(
            // Kept by triggers as episodes finish (migration 0019).
            "SELECT policy, episodes FROM campaign_policies
             WHERE campaign_id = $1 AND episodes > 0
             ORDER BY episodes DESC, policy::text",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            // A card this version cannot read is left out, as in the replay.
            .filter_map(|(card, episodes)| {
                Some(PolicyUse {
                    card: serde_json::from_value(card).ok()?,
                    episodes,
                })
            })
            .collect())
    }

    /// Campaigns, newest first.
    pub async fn list_campaigns(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<CampaignView>, i64), StoreError> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "{SELECT} ORDER BY c.created_at DESC, c.id LIMIT $1 OFFSET $2"
        ))
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let (total,): (i64,) = sqlx::query_as("SELECT count(*) FROM campaigns")
            .fetch_one(&self.pool)
            .await?;
        Ok((rows.into_iter().map(Into::into).collect(), total))
    }

    /// Moves a campaign to a new status, stamping start and end times.
    pub async fn set_campaign_status(
        &self,
        id: Uuid,
        status: Status,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE campaigns SET status = $2, error = coalesce($3, error),
                started_at = CASE WHEN $2 = $4 THEN coalesce(started_at, now()) ELSE started_at END,
                finished_at = CASE WHEN $2 = ANY($5) THEN now() ELSE NULL END
             WHERE id = $1",
        )
        .bind(id)
        .bind(status)
        .bind(error)
        .bind(Status::Running)
        .bind(Status::ENDED)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a running campaign completed; false if it is no longer running (a user
    /// cancelled or paused it meanwhile: that word stands, never overwritten).
    pub async fn complete_campaign(&self, id: Uuid) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE campaigns SET status = $2, finished_at = now()
             WHERE id = $1 AND status = $3",
        )
        .bind(id)
        .bind(Status::Completed)
        .bind(Status::Running)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A campaign's status, if it exists.
    pub async fn campaign_status(&self, id: Uuid) -> Result<Option<Status>, StoreError> {
        let row: Option<(Status,)> = sqlx::query_as("SELECT status FROM campaigns WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|(s,)| s))
    }

    /// Campaigns in one of the given statuses, oldest first; never an interactive one
    /// (its sessions run it).
    pub async fn campaigns_with_status(
        &self,
        statuses: &[Status],
    ) -> Result<Vec<Uuid>, StoreError> {
        let rows: Vec<(Uuid,)> = sqlx::query_as(
            "SELECT id FROM campaigns WHERE status = ANY($1) AND NOT interactive ORDER BY created_at, id",
        )
        .bind(statuses)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}

/// Outcomes of a campaign's finished episodes for one site and difficulty.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BreakdownRow {
    /// Website.
    pub site: String,
    /// Difficulty band.
    pub difficulty: String,
    /// Finished episodes.
    pub episodes: i64,
    /// Successful ones.
    pub successes: i64,
    /// Mean partial credit.
    pub mean_score: f64,
    /// Mean steps.
    pub mean_steps: f64,
}

impl Store {
    /// Finished-episode outcomes of a campaign by site and difficulty.
    pub async fn campaign_breakdown(&self, id: Uuid) -> Result<Vec<BreakdownRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT t.site, t.difficulty, count(*) AS episodes, count(*) FILTER (WHERE e.success) AS successes,
                coalesce(avg(e.score), 0)::float8 AS mean_score, coalesce(avg(e.steps), 0)::float8 AS mean_steps
             FROM episodes e JOIN tasks t ON t.id = e.task_id
             WHERE e.campaign_id = $1 AND e.status = $2
             GROUP BY t.site, t.difficulty ORDER BY t.site, t.difficulty",
        )
        .bind(id)
        .bind(EpisodeStatus::Finished)
        .fetch_all(&self.pool)
        .await?)
    }
}
