//! The engine: composes the browser pool, tasks, rubrics, policies and the Postgres store
//! into campaigns of judged, stored episodes.
//!
//! Its public API is small: [`Engine`] (the facade the CLI, `web` and `trainloop` call),
//! campaign specs, the runner's settings, the practice-site server, and two namespaces
//! used as such, [`judge`] (the model judge and its calibration) and [`audit`] (rubric
//! audits). Everything else is private:
//! - `runner` claims episodes (leases in Postgres), runs them, judges, stores;
//! - `campaign` validates a campaign request and plans its episodes;
//! - `snapshot` is the final page as the rule judge reads it, below runner and judge;
//! - `blocked` judges pages that turn the agent away (CAPTCHA, bot and login walls);
//! - `env` holds the task environments: the bundled practice websites, MiniWoB++;
//! - [`sessions`]: environment sessions, episodes an API client drives step by step;
//! - [`recordings`]: recordings of web state as HAR files, out and in.
//!
//! Must not touch: SQL (the `store` crate's), HTTP handlers or the dashboard (`web` sits on
//! top of it), policy internals (the `policy` crate's). Data flows one way: task →
//! campaign → episode → step → verdict.

pub mod audit;
mod blocked;
mod campaign;
mod drain;
mod engine;
mod env;
mod error;
pub mod judge;
pub mod recordings;
mod runner;
pub mod sessions;
mod snapshot;

pub use blocked::{Block, BlockReason};
pub use campaign::{
    CampaignConfig, CampaignSpec, MAX_ANSWER_CHECKS, MAX_CAMPAIGN_NAME_BYTES, TrafficPlan,
    UnmatchedAnswer,
};
pub use drain::Drained;
pub use engine::{BUNDLED_TAG, BundledReport, Engine};
pub use env::{SitesServer, find_miniwob, miniwob_done, miniwob_start, miniwob_task_names};
pub use error::EngineError;
pub use runner::{InfraError, POLICY_CALL_RETRIES, PageSnapshot, RunnerConfig, Watchdog};
