//! The Postgres store: the only crate that writes SQL.
//!
//! Owns the queries, the migrations' runner (`MIGRATOR`, over `migrations/`), the typed
//! read models the API serves (`TaskView`, `CampaignView`, `EpisodeDetail`, ...), the
//! dataset export, and the synthetic-history generator (kept here because it writes SQL).
//! Must not touch: browsers, policies, the runner, the judge, HTTP. It depends on no
//! surfgym crate but the data types it stores (`tasks`, `rubrics`, `spaces`).
//!
//! The schema lives in `migrations/` (embedded with `sqlx::migrate!`); queries are plain
//! `query`/`query_as` with binds, so no database is needed at compile time. An episode's
//! steps, verdicts and outcome are written in one transaction, fenced by the runner's
//! lease: a runner that lost its lease cannot store a duplicate.
//!
//! The store owns the types it stores (episode records, the [`PolicyCard`]) and imports
//! nothing from the layers above it: policies, the runner and the judge.

pub mod analysis;
mod blobs;
mod campaigns;
mod card;
mod episodes;
pub mod export;
mod local_sites;
mod recordings;
mod run_leases;
mod runs;
mod sanitize;
mod sessions;
pub mod state;
pub mod synthetic;
mod tasks;
mod tokens;
mod triage;

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

pub use blobs::{Blob, hash as blob_hash};
pub use campaigns::{BreakdownRow, CampaignCounts, CampaignView, PlannedEpisode, PolicyUse};
pub use card::{PolicyCard, Sampling};
pub use episodes::{
    AX_TREE_LIMIT, ClaimedEpisode, EndReason, EpisodeDetail, EpisodeFilter, EpisodeKey,
    EpisodeRecord, EpisodeSummary, StepCore, StepRecord, StepView, VerdictOutcome, VerdictRecord,
    VerdictView,
};
pub use recordings::{ExchangeRecord, RecordingView};
pub use run_leases::RunFigures;
pub use runs::{IterationUpdate, IterationView, RunView};
pub use sessions::LOST_SESSION;
pub use state::{EpisodeStatus, Phase, Stage, Status, StatusFilter, UnknownState};
pub use tasks::{TaskFilter, TaskView};
pub use tokens::{Scope, TOKEN_PREFIX, TokenView};
pub use triage::{
    EndReasonGroup, ErrorGroup, FactGroup, PageEventGroup, TRIAGE_EXAMPLES, TRIAGE_GROUPS, Triage,
    TriageTotals,
};

/// A duration as whole milliseconds for an `INTEGER` column, saturating at `i32::MAX`
/// (about 24 days) rather than failing the write.
pub fn ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// The embedded migrations, for `#[sqlx::test(migrator = "store::MIGRATOR")]`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Store failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A row with this key exists already.
    #[error("{0}")]
    Conflict(String),
    /// A row could not be read back into its type (a bug or a hand-edited database).
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Connecting or migrating failed.
    #[error(
        "cannot use the database at {url}: {source} (is Postgres running? set DATABASE_URL, or leave it unset to use the private cluster)"
    )]
    Connect {
        /// The URL, password masked.
        url: String,
        /// The cause.
        source: sqlx::Error,
    },
    /// Migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error.
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
}

impl StoreError {
    /// A short stable label for logs and API error types.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Conflict(_) => "conflict",
            StoreError::Corrupt(_) => "corrupt",
            StoreError::Connect { .. } => "connect",
            StoreError::Migrate(_) => "migrate",
            StoreError::Db(_) => "database",
        }
    }
}

/// A handle on the database. Cloning shares the connection pool.
#[derive(Clone, Debug)]
pub struct Store {
    pool: PgPool,
    /// The practice sites this process serves (`local_sites`).
    local_sites: local_sites::LocalSites,
}

fn mask(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

impl Store {
    /// Connects and applies pending migrations.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        let failed = |source| StoreError::Connect {
            url: mask(url),
            source,
        };
        // No JIT compilation: the dashboard's aggregates over a big campaign cost enough
        // to cross Postgres' JIT threshold, and compiling took seconds (5 of 8.5 for the
        // latency plot at 100,000 episodes) where running took well under one
        // (docs/benchmarks/dashboard-scale.md).
        let options = PgConnectOptions::from_str(url)
            .map_err(failed)?
            .options([("jit", "off")]);
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(15))
            .connect_with(options)
            .await
            .map_err(failed)?;
        MIGRATOR.run(&pool).await?;
        Ok(Store::from_pool(pool))
    }

    /// Wraps an existing, migrated pool (tests get one from `#[sqlx::test]`).
    pub fn from_pool(pool: PgPool) -> Store {
        Store {
            pool,
            local_sites: Default::default(),
        }
    }

    /// Says that this process serves these practice sites (site → base URL): tasks
    /// registered against other bases of them are read with these (`local_sites`).
    pub fn serve_sites(&self, bases: &std::collections::BTreeMap<String, String>) {
        self.local_sites.serve(bases);
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            super::mask("postgres://u:secret@h:5/db"),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(super::mask("postgres://u@h/db"), "postgres://u@h/db");
    }
}
