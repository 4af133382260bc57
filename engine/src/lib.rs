//! The engine: composes the browser pool, tasks, rubrics, policies and the Postgres store
//! into campaigns of judged, stored episodes.
//!
//! - [`Engine`] is the facade the CLI and the web server use (API boundary).
//! - [`store`] is the only module that writes SQL; the schema lives in `migrations/`.
//! - [`policy`] holds the [`policy::Policy`] seam and the built-in policies.
//! - [`runner`] claims episodes (leases in Postgres), runs them, judges, stores.
//! - [`snapshot`] is the final page as the rule judge reads it, below runner and judge.
//! - [`env`](mod@env) holds the task environments: the bundled practice websites, MiniWoB++.
//! - [`export`] reads finished episodes out as a dataset for trainers; [`traces`] reads
//!   them (or an export) back as training data, each step's model inputs rebuilt.
//!
//! Data flows one way: task → campaign → episode → step → verdict. The engine knows
//! nothing of HTTP handlers or the dashboard; `web` sits on top of it.

pub mod audit;
pub mod campaign;
mod engine;
pub mod env;
mod error;
pub mod judge;
pub mod runner;
pub mod snapshot;

pub use campaign::{CampaignConfig, CampaignSpec};
pub use engine::{BUNDLED_TAG, BundledReport, Engine};
pub use error::EngineError;
