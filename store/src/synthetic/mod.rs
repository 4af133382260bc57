//! A synthetic history for scale benchmarks (`surfgym bench history`): campaigns, tasks
//! across sites, difficulties and splits, episodes with varied outcomes, end reasons and
//! timings, steps with actions, thoughts and screenshot references, and verdicts, written
//! fast (column arrays through `unnest`, large batches, two in flight).
//!
//! Everything written is marked: tasks carry the tag and id prefix [`MARK`], campaigns a
//! `"synthetic": true` in their config, a name starting with it and a policy no process
//! registers (so no scheduler ever runs them). A database holding any campaign not so
//! marked is real history, and is refused unless the caller forces it.

mod insert;
mod plan;
mod rows;

use std::sync::Arc;

use chrono::Utc;
use futures::{StreamExt, TryStreamExt};
use sqlx::ConnectOptions;

use super::{Store, StoreError};

/// The tag, id prefix and config key that mark synthetic rows.
pub const MARK: &str = "synthetic";

/// What history to generate.
#[derive(Debug, Clone)]
pub struct HistorySpec {
    /// Episodes in all.
    pub episodes: u64,
    /// Steps per episode on average: `episodes × steps_per_episode` steps are stored, spread
    /// over the episodes that finished (pending, cancelled and failed ones store none).
    pub steps_per_episode: u32,
    /// Campaigns; `None`: one per thousand episodes.
    pub campaigns: Option<u32>,
    /// Distinct tasks.
    pub tasks: u32,
    /// Seed: the same seed plans the same history.
    pub seed: u64,
    /// Episodes per transaction.
    pub batch: usize,
    /// Write even when the database holds real (non-synthetic) campaigns.
    pub force: bool,
}

impl Default for HistorySpec {
    fn default() -> HistorySpec {
        HistorySpec {
            episodes: 100_000,
            steps_per_episode: 20,
            campaigns: None,
            tasks: 400,
            seed: 7,
            batch: 1000,
            force: false,
        }
    }
}

impl HistorySpec {
    fn campaigns(&self) -> usize {
        self.campaigns
            .map(|c| c as usize)
            .unwrap_or((self.episodes / 1000).max(1) as usize)
    }

    fn check(&self) -> Result<(), SyntheticError> {
        let bad = |field: &'static str, message: &str| {
            Err(SyntheticError::Invalid {
                field,
                message: message.to_string(),
            })
        };
        if !(1..=50_000_000).contains(&self.episodes) {
            return bad("episodes", "must be between 1 and 50000000");
        }
        if !(1..=200).contains(&self.steps_per_episode) {
            return bad("steps_per_episode", "must be between 1 and 200");
        }
        if self.campaigns == Some(0) || self.campaigns() as u64 > self.episodes {
            return bad("campaigns", "must be between 1 and the number of episodes");
        }
        if !(1..=100_000).contains(&self.tasks) {
            return bad("tasks", "must be between 1 and 100000");
        }
        if !(1..=100_000).contains(&self.batch) {
            return bad("batch", "must be between 1 and 100000");
        }
        Ok(())
    }
}

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HistoryReport {
    /// Tasks planned (existing synthetic tasks of the same ids are reused).
    pub tasks: u64,
    /// Campaigns written.
    pub campaigns: u64,
    /// Episodes written.
    pub episodes: u64,
    /// Steps written.
    pub steps: u64,
    /// Verdicts written.
    pub verdicts: u64,
}

/// Why a history was not written.
#[derive(Debug, thiserror::Error)]
pub enum SyntheticError {
    /// A bad setting.
    #[error("{field}: {message}")]
    Invalid {
        /// The setting.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The database holds real history.
    #[error(
        "the database holds {0} campaigns that are not synthetic (real history): refusing to mix \
         synthetic rows in; use an empty database, or force it (synthetic rows stay marked \
         `synthetic`)"
    )]
    RealData(i64),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How far the writing is, after each batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct HistoryProgress {
    /// Episodes written so far.
    pub episodes: u64,
    /// Steps written so far.
    pub steps: u64,
}

/// Screenshots in the pool every step refers to (distinct images; real runs store one
/// per step, but the lists and aggregates never read blob bytes).
const BLOBS: usize = 256;

impl Store {
    /// Campaigns not marked synthetic: real history.
    pub async fn real_campaigns(&self) -> Result<i64, StoreError> {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM campaigns
             WHERE NOT coalesce(config->>'synthetic' = 'true', false)",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(n)
    }

    /// Writes a synthetic history as `spec` asks, calling `progress` after each batch.
    pub async fn generate_history(
        &self,
        spec: &HistorySpec,
        mut progress: impl FnMut(HistoryProgress),
    ) -> Result<HistoryReport, SyntheticError> {
        spec.check()?;
        let real = self.real_campaigns().await?;
        if real > 0 && !spec.force {
            return Err(SyntheticError::RealData(real));
        }
        let plan = Arc::new(plan::plan(spec, Utc::now()));
        insert::tasks(&self.pool, &plan).await?;
        insert::campaigns(&self.pool, &plan).await?;
        let shared = Arc::new(rows::Shared::new(insert::blobs(&self.pool, BLOBS).await?));
        let ranges: Vec<_> = (0..plan.episodes.len())
            .step_by(spec.batch)
            .map(|s| s..(s + spec.batch).min(plan.episodes.len()))
            .collect();
        let seed = spec.seed;
        // Its own connections, whose big statements are expected to be slow: without
        // sqlx's slow-statement warnings over the progress bar.
        let options = (*self.pool.connect_options())
            .clone()
            .disable_statement_logging();
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(StoreError::from)?;
        // Two batches in flight: one being built while the other is written, or both
        // written at once (Postgres uses a core per connection).
        let mut written = futures::stream::iter(ranges)
            .map(|range| {
                let (plan, shared, pool) = (plan.clone(), shared.clone(), pool.clone());
                async move {
                    let b = tokio::task::spawn_blocking(move || {
                        rows::batch(&plan, range, &shared, seed)
                    })
                    .await
                    .map_err(|e| StoreError::Corrupt(format!("building rows: {e}")))?;
                    insert::batch(&pool, &b).await?;
                    Ok::<_, StoreError>((
                        b.episodes.id.len() as u64,
                        b.steps.idx.len() as u64,
                        b.verdicts.ord.len() as u64,
                    ))
                }
            })
            .buffer_unordered(2);
        let mut report = HistoryReport {
            tasks: plan.tasks.len() as u64,
            campaigns: plan.campaigns.len() as u64,
            ..HistoryReport::default()
        };
        while let Some((e, s, v)) = written.try_next().await? {
            report.episodes += e;
            report.steps += s;
            report.verdicts += v;
            progress(HistoryProgress {
                episodes: report.episodes,
                steps: report.steps,
            });
        }
        drop(written);
        // Fresh statistics, so the planner sees the history it is benchmarked on, and the
        // episodes' visibility map, as autovacuum would leave it after a while: what
        // lets deep pages skip index entries without reading rows.
        for sql in [
            "VACUUM (ANALYZE) campaigns, campaign_stats, episodes",
            "ANALYZE steps, verdicts, tasks",
        ] {
            sqlx::query(sql)
                .execute(&pool)
                .await
                .map_err(StoreError::from)?;
        }
        pool.close().await;
        Ok(report)
    }

    /// The size on disk of each table (its indexes and TOAST included), largest first,
    /// and of the whole database: what a history costs.
    pub async fn table_sizes(&self) -> Result<(Vec<(String, i64)>, i64), StoreError> {
        let tables: Vec<(String, i64)> = sqlx::query_as(
            "SELECT c.relname::text, pg_total_relation_size(c.oid)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relkind = 'r' AND n.nspname = 'public'
             ORDER BY 2 DESC",
        )
        .fetch_all(&self.pool)
        .await?;
        let (db,): (i64,) = sqlx::query_as("SELECT pg_database_size(current_database())")
            .fetch_one(&self.pool)
            .await?;
        Ok((tables, db))
    }
}
