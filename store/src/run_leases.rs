//! Training runs as the API and the servers that execute them see them: pages of runs,
//! state changes that only apply from the states they are allowed from, and leases by
//! which one server at a time executes a run created through the API (`managed`). A run
//! whose lease lapsed (its server was killed) is claimed again by the next server that
//! looks, which resumes it where it stopped.

use std::time::Duration;

use uuid::Uuid;

use super::{RunView, Store, StoreError};
use crate::state::{Stage, Status};

const RUN: &str =
    "SELECT id, name, config, state, version, error, created_at, updated_at FROM training_runs";

/// Per-run figures for `/metrics`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunFigures {
    /// The run.
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: Status,
    /// Iterations finished (iteration 0, the untrained evaluation, included).
    pub iterations_done: i64,
    /// The newest finished iteration's train success.
    pub last_train_success: Option<f64>,
    /// The newest finished iteration's held-out success.
    pub last_eval_success: Option<f64>,
    /// Wall time of all its updates, seconds.
    pub update_seconds: f64,
}

impl Store {
    /// Stores a new run to be executed by a server (state `queued`, `managed`).
    pub async fn create_managed_run(
        &self,
        id: Uuid,
        name: &str,
        config: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO training_runs (id, name, config, state, managed)
             VALUES ($1, $2, $3, $4, true)",
        )
        .bind(id)
        .bind(name)
        .bind(config)
        .bind(Status::Queued)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A page of runs, newest first, and how many there are.
    pub async fn page_runs(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<RunView>, i64), StoreError> {
        let items = sqlx::query_as(&format!(
            "{RUN} ORDER BY created_at DESC, id LIMIT $1 OFFSET $2"
        ))
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let (total,): (i64,) = sqlx::query_as("SELECT count(*) FROM training_runs")
            .fetch_one(&self.pool)
            .await?;
        Ok((items, total))
    }

    /// Moves a run to `to` if it is in one of `from`, in one statement (so two clients
    /// racing cannot both succeed); returns the state it was in (None: no such run).
    /// `managed` hands the run to the servers' executors (a resumed run).
    pub async fn transition_run(
        &self,
        id: Uuid,
        from: &[Status],
        to: Status,
        managed: bool,
    ) -> Result<Option<(Status, bool)>, StoreError> {
        let row: Option<(Status, bool)> = sqlx::query_as(
            "WITH old AS (SELECT state FROM training_runs WHERE id = $1 FOR UPDATE)
             UPDATE training_runs r SET
                state = CASE WHEN old.state = ANY($2) THEN $3 ELSE r.state END,
                managed = CASE WHEN old.state = ANY($2) THEN r.managed OR $4 ELSE r.managed END,
                error = CASE WHEN old.state = ANY($2) THEN NULL ELSE r.error END,
                updated_at = CASE WHEN old.state = ANY($2) THEN now() ELSE r.updated_at END
             FROM old WHERE r.id = $1
             RETURNING old.state, old.state = ANY($2)",
        )
        .bind(id)
        .bind(from)
        .bind(to)
        .bind(managed)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row)
    }

    /// Claims the oldest managed run that is queued, or running under a lapsed lease (its
    /// server died), for `owner` for `lease`.
    pub async fn claim_run(
        &self,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<Uuid>, StoreError> {
        let row: Option<(Uuid,)> = sqlx::query_as(
            "UPDATE training_runs SET lease_owner = $1,
                lease_until = now() + make_interval(secs => $2), updated_at = now()
             WHERE id = (
                SELECT id FROM training_runs
                WHERE managed AND state = ANY($3)
                  AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $1)
                ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .bind(owner)
        .bind(lease.as_secs_f64())
        .bind(&[Status::Queued, Status::Running][..])
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.0))
    }

    /// Extends `owner`'s lease on a run; false if it no longer holds it.
    pub async fn renew_run_lease(
        &self,
        id: Uuid,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let r = sqlx::query(
            "UPDATE training_runs SET lease_until = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2",
        )
        .bind(id)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Gives a run's lease up.
    pub async fn release_run(&self, id: Uuid, owner: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE training_runs SET lease_owner = NULL, lease_until = NULL
             WHERE id = $1 AND lease_owner = $2",
        )
        .bind(id)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Hands a run to the calling process (`surfgym train resume`): no server's executor
    /// claims it afterwards. False while a server holds it under a live lease.
    pub async fn take_run(&self, id: Uuid) -> Result<bool, StoreError> {
        let r = sqlx::query(
            "UPDATE training_runs SET managed = false, lease_owner = NULL, lease_until = NULL
             WHERE id = $1 AND (lease_until IS NULL OR lease_until < now())",
        )
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Runs by state.
    pub async fn runs_by_state(&self) -> Result<Vec<(Status, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT state, count(*) FROM training_runs GROUP BY state ORDER BY state",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// The figures `/metrics` shows per run: the newest 100 runs.
    pub async fn run_figures(&self) -> Result<Vec<RunFigures>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT r.id, r.name, r.state,
                count(i.idx) FILTER (WHERE i.phase = $1) AS iterations_done,
                (SELECT train_success FROM training_iterations l
                  WHERE l.run_id = r.id AND l.phase = $1 AND l.train_success IS NOT NULL
                  ORDER BY l.idx DESC LIMIT 1) AS last_train_success,
                (SELECT eval_success FROM training_iterations l
                  WHERE l.run_id = r.id AND l.phase = $1 AND l.eval_success IS NOT NULL
                  ORDER BY l.idx DESC LIMIT 1) AS last_eval_success,
                COALESCE(sum(i.train_ms), 0)::double precision / 1000.0 AS update_seconds
             FROM training_runs r LEFT JOIN training_iterations i ON i.run_id = r.id
             GROUP BY r.id ORDER BY r.created_at DESC LIMIT 100",
        )
        .bind(Stage::Done)
        .fetch_all(&self.pool)
        .await?)
    }
}
