//! Training runs: the curriculum interaction-horizon RL loop (TTI's, WebGym's) around the
//! trainer. A run alternates rollout campaigns of the current policy version on training
//! tasks, an update on the judged rollouts (`training`), and a greedy evaluation on
//! held-out tasks, and keeps every iteration's figures in Postgres so it survives being
//! killed at any point.
//!
//! This crate owns the loop, its configuration ([`config`]), the horizon schedules
//! ([`curriculum`]) and turning recorded episodes into samples ([`data`]). It must not
//! write SQL (the engine's store does) nor know the dashboard; it reaches a served
//! policy only through the engine's HTTP policy ([`served`]).
#![deny(missing_docs)]

pub mod config;
pub mod curriculum;
pub mod data;
pub mod devices;
pub mod executor;
pub mod external;
pub mod live_web;
mod plan;
pub mod run;
pub mod schedule;
pub mod served;
pub mod staleness;
pub mod update;

pub use config::RunConfig;
pub use curriculum::Curriculum;

use std::path::Path;

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting or the data is wrong; the message names the field or the thing.
    #[error("{0}")]
    Config(String),
    /// No run (or campaign) with this id.
    #[error("no training run or campaign {0}")]
    NoRun(uuid::Uuid),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The engine refused or failed.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// Recorded episodes could not be read.
    #[error(transparent)]
    Trace(#[from] policy::traces::TraceError),
    /// The trainer failed.
    #[error(transparent)]
    Train(#[from] training::TrainError),
    /// An external trainer failed or gave back something refused; nothing was published.
    #[error(transparent)]
    External(#[from] external::ExternalError),
}

impl RunError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
