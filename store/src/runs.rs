//! Training-run rows: a run's config and state, and one row per iteration with its
//! phase, campaigns, version and figures. The loop (`trainloop`) decides; this module only
//! reads and writes, each write one statement, so a run killed between two writes resumes
//! from the last one.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::{Store, StoreError};
use crate::state::{EpisodeStatus, Stage, Status};

/// A training run.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunView {
    /// Identifier.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// The validated configuration.
    pub config: serde_json::Value,
    /// running, paused, completed, failed or cancelled.
    pub state: Status,
    /// The newest published version (None: the base model).
    pub version: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// One iteration of a run (0: the untrained model's evaluation).
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct IterationView {
    /// From 0.
    pub idx: i32,
    /// rollout, train, eval or done.
    pub phase: Stage,
    /// Each train task's horizon.
    pub horizons: serde_json::Value,
    /// The rollout campaigns (one per distinct horizon).
    pub rollout_campaigns: Vec<Uuid>,
    /// The held-out evaluation campaign.
    pub eval_campaign: Option<Uuid>,
    /// The version trained from.
    pub parent_version: Option<String>,
    /// The version it published.
    pub version: Option<String>,
    /// Samples trained on.
    pub samples: Option<i32>,
    /// Steps left out, by reason.
    pub dropped: Option<serde_json::Value>,
    /// Mean loss of the update's last epoch.
    pub loss: Option<f64>,
    /// Success of the rollouts.
    pub train_success: Option<f64>,
    /// Greedy success on the held-out split.
    pub eval_success: Option<f64>,
    /// Environment steps of the rollouts (cumulative figures are summed by readers).
    pub env_steps: Option<i64>,
    /// Wall time of the rollouts (judging included), ms.
    pub rollout_ms: Option<i64>,
    /// Time spent judging the rollouts, summed over their episodes, ms (inside
    /// `rollout_ms`: episodes are judged while others still run).
    pub judge_ms: Option<i64>,
    /// Wall time of the update, ms.
    pub train_ms: Option<i64>,
    /// Wall time of the evaluation, ms.
    pub eval_ms: Option<i64>,
    /// Wall time of the whole iteration, from its row's start (its first phase) to its
    /// last phase's end, ms; with overlapped training it is less than the phases' sum.
    pub wall_ms: Option<i64>,
    /// The update's report.
    pub report: Option<serde_json::Value>,
    /// Started.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// What a phase's end writes into its iteration (None: left as is).
#[derive(Debug, Clone, Default)]
pub struct IterationUpdate {
    /// The next phase.
    pub phase: Option<Stage>,
    /// See [`IterationView`].
    pub rollout_campaigns: Option<Vec<Uuid>>,
    /// See [`IterationView`].
    pub eval_campaign: Option<Uuid>,
    /// See [`IterationView`].
    pub parent_version: Option<String>,
    /// See [`IterationView`].
    pub version: Option<String>,
    /// See [`IterationView`].
    pub samples: Option<i32>,
    /// See [`IterationView`].
    pub dropped: Option<serde_json::Value>,
    /// See [`IterationView`].
    pub loss: Option<f64>,
    /// See [`IterationView`].
    pub train_success: Option<f64>,
    /// See [`IterationView`].
    pub eval_success: Option<f64>,
    /// See [`IterationView`].
    pub env_steps: Option<i64>,
    /// See [`IterationView`].
    pub rollout_ms: Option<i64>,
    /// See [`IterationView`].
    pub judge_ms: Option<i64>,
    /// See [`IterationView`].
    pub train_ms: Option<i64>,
    /// See [`IterationView`].
    pub eval_ms: Option<i64>,
    /// See [`IterationView`].
    pub report: Option<serde_json::Value>,
}

const RUN: &str =
    "SELECT id, name, config, state, version, error, created_at, updated_at FROM training_runs";
const ITERATION: &str = "SELECT idx, phase, horizons, rollout_campaigns, eval_campaign, parent_version, version,
    samples, dropped, loss, train_success, eval_success, env_steps, rollout_ms, judge_ms, train_ms, eval_ms, wall_ms, report,
    started_at, finished_at FROM training_iterations";

impl Store {
    /// Stores a new run.
    pub async fn create_run(
        &self,
        id: Uuid,
        name: &str,
        config: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO training_runs (id, name, config) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(name)
            .bind(config)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// One run.
    pub async fn get_run(&self, id: Uuid) -> Result<Option<RunView>, StoreError> {
        Ok(sqlx::query_as(&format!("{RUN} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Every run, newest first.
    pub async fn list_runs(&self) -> Result<Vec<RunView>, StoreError> {
        Ok(sqlx::query_as(&format!("{RUN} ORDER BY created_at DESC"))
            .fetch_all(&self.pool)
            .await?)
    }

    /// Sets a run's state (and why, for `failed`).
    pub async fn set_run_state(
        &self,
        id: Uuid,
        state: Status,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE training_runs SET state = $2, error = $3, updated_at = now() WHERE id = $1",
        )
        .bind(id)
        .bind(state)
        .bind(error)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the run's newest published version.
    pub async fn set_run_version(&self, id: Uuid, version: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE training_runs SET version = $2, updated_at = now() WHERE id = $1")
            .bind(id)
            .bind(version)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Time spent judging the finished episodes of `campaigns`, ms.
    pub async fn judge_ms(&self, campaigns: &[Uuid]) -> Result<i64, StoreError> {
        let (ms,): (i64,) = sqlx::query_as(
            "SELECT coalesce(sum(judge_ms), 0)::bigint FROM episodes
             WHERE campaign_id = ANY($1) AND status = $2",
        )
        .bind(campaigns)
        .bind(EpisodeStatus::Finished)
        .fetch_one(&self.pool)
        .await?;
        Ok(ms)
    }

    /// The run's iterations in order.
    pub async fn run_iterations(&self, id: Uuid) -> Result<Vec<IterationView>, StoreError> {
        Ok(
            sqlx::query_as(&format!("{ITERATION} WHERE run_id = $1 ORDER BY idx"))
                .bind(id)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Starts iteration `idx` with its horizons, unless it was started already (a resumed
    /// run keeps what the first start recorded); returns the iteration as stored.
    pub async fn start_iteration(
        &self,
        id: Uuid,
        idx: i32,
        phase: Stage,
        horizons: &serde_json::Value,
    ) -> Result<IterationView, StoreError> {
        sqlx::query(
            "INSERT INTO training_iterations (run_id, idx, phase, horizons) VALUES ($1, $2, $3, $4)
             ON CONFLICT (run_id, idx) DO NOTHING",
        )
        .bind(id)
        .bind(idx)
        .bind(phase)
        .bind(horizons)
        .execute(&self.pool)
        .await?;
        sqlx::query_as(&format!("{ITERATION} WHERE run_id = $1 AND idx = $2"))
            .bind(id)
            .bind(idx)
            .fetch_one(&self.pool)
            .await
            .map_err(Into::into)
    }

    /// Writes what a phase produced into its iteration, in one statement.
    pub async fn update_iteration(
        &self,
        id: Uuid,
        idx: i32,
        u: IterationUpdate,
    ) -> Result<(), StoreError> {
        let done = u.phase == Some(Stage::Done);
        sqlx::query(
            "UPDATE training_iterations SET
                phase = COALESCE($3, phase),
                rollout_campaigns = COALESCE($4, rollout_campaigns),
                eval_campaign = COALESCE($5, eval_campaign),
                parent_version = COALESCE($6, parent_version),
                version = COALESCE($7, version),
                samples = COALESCE($8, samples),
                dropped = COALESCE($9, dropped),
                loss = COALESCE($10, loss),
                train_success = COALESCE($11, train_success),
                eval_success = COALESCE($12, eval_success),
                env_steps = COALESCE($13, env_steps),
                rollout_ms = COALESCE($14, rollout_ms),
                train_ms = COALESCE($15, train_ms),
                eval_ms = COALESCE($16, eval_ms),
                report = COALESCE($17, report),
                finished_at = CASE WHEN $18 THEN now() ELSE finished_at END,
                wall_ms = CASE WHEN $18
                    THEN (extract(epoch FROM now() - started_at) * 1000)::bigint
                    ELSE wall_ms END,
                judge_ms = COALESCE($19, judge_ms)
             WHERE run_id = $1 AND idx = $2",
        )
        .bind(id)
        .bind(idx)
        .bind(u.phase)
        .bind(u.rollout_campaigns)
        .bind(u.eval_campaign)
        .bind(u.parent_version)
        .bind(u.version)
        .bind(u.samples)
        .bind(u.dropped)
        .bind(u.loss)
        .bind(u.train_success)
        .bind(u.eval_success)
        .bind(u.env_steps)
        .bind(u.rollout_ms)
        .bind(u.train_ms)
        .bind(u.eval_ms)
        .bind(u.report)
        .bind(done)
        .bind(u.judge_ms)
        .execute(&self.pool)
        .await?;
        sqlx::query("UPDATE training_runs SET updated_at = now() WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
