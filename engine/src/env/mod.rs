//! Task environments: what a task runs in besides the browser. The bundled practice
//! websites ([`sites`]) and MiniWoB++, started on its page before the agent's first step
//! ([`miniwob`]).
//!
//! This module sits below the runner: it knows pages and sessions, never episodes, leases,
//! policies or the store. Its failures are [`EnvError`]s, which the runner counts as
//! infrastructure failures.

pub mod miniwob;
pub mod sites;

use browser_pool::PoolError;

pub use miniwob::{miniwob_done, miniwob_start};
pub use sites::{SitesServer, find_miniwob, miniwob_task_names};

/// An environment that could not be started or read on its page.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// The browser failed.
    #[error("browser: {0}")]
    Browser(#[from] PoolError),
    /// The environment did not start on its page.
    #[error("setup: {0}")]
    Setup(String),
}
