//! What a session answers: its state after a step (the observation its client acts on
//! next, and the verdict once it ended), its state as listed, and why a request failed.

use std::sync::Arc;
use std::time::Duration;

use policy::StepInput;
use serde::Serialize;
use store::{EndReason, VerdictRecord};
use uuid::Uuid;

use super::{Dialect, ObserveOptions};

/// Why a session request failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No such session (never opened, or ended).
    #[error("no open session {0} (it never existed, or it ended)")]
    NotFound(Uuid),
    /// Another client's session.
    #[error("session {0} belongs to another API token")]
    Forbidden(Uuid),
    /// A limit on open sessions was reached.
    #[error(
        "{open} sessions are open {scope}, the limit; close one (DELETE /api/sessions/ID) or wait for one to end"
    )]
    Capacity {
        /// Where the limit applies: `on this server`, `for this token`.
        scope: &'static str,
        /// Open now.
        open: usize,
        /// The limit.
        limit: usize,
    },
    /// A step of the same session is still running.
    #[error("a step of session {0} is still running; send one action at a time")]
    Busy(Uuid),
    /// The session has ended.
    #[error("the session has ended")]
    Ended,
    /// A bad request field.
    #[error("{field}: {message}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The browser, the judge or the store failed: the episode is recorded as failed.
    #[error("the session failed and its episode was recorded as failed: {0}")]
    Infra(String),
    /// The server is stopping.
    #[error("the server is stopping; open the session on another server")]
    Stopping,
}

/// How a session's episode ended.
#[derive(Debug, Clone)]
pub struct Ending {
    /// Why it ended.
    pub end_reason: EndReason,
    /// Judged successful (false when the rubric could not be evaluated).
    pub success: bool,
    /// The rubric's partial credit (0 when it could not be evaluated).
    pub score: f64,
    /// Each fact's verdict.
    pub verdicts: Vec<VerdictRecord>,
    /// The rubric's own error: the episode is stored unscored.
    pub judge_error: Option<String>,
    /// The answer judged.
    pub final_answer: Option<String>,
}

/// A session as a step left it: what the client sees next.
#[derive(Clone)]
pub struct Snapshot {
    /// The session.
    pub session_id: Uuid,
    /// Its episode.
    pub episode_id: Uuid,
    /// Its client's interactive campaign.
    pub campaign_id: Uuid,
    /// Its task.
    pub task_id: String,
    /// The instruction in force (the task's, or the one its environment generated).
    pub instruction: Arc<str>,
    /// Its dialect.
    pub dialect: Dialect,
    /// What observations carry.
    pub observe: ObserveOptions,
    /// Steps taken.
    pub step: u32,
    /// Step limit.
    pub max_steps: u32,
    /// The observation (and instruction) for the next action; `None` once ended.
    pub input: Option<StepInput>,
    /// The last action, canonical.
    pub last_action: Option<String>,
    /// Since the session opened.
    pub elapsed: Duration,
    /// How it ended, once it has.
    pub ending: Option<Ending>,
}

/// An open session as listed.
#[derive(Debug, Clone, Serialize)]
pub struct SessionState {
    /// The session.
    pub session_id: Uuid,
    /// Its episode.
    pub episode_id: Uuid,
    /// Its client's interactive campaign.
    pub campaign_id: Uuid,
    /// Its task.
    pub task_id: String,
    /// The environment's seed.
    pub seed: u64,
    /// Its dialect.
    pub dialect: Dialect,
    /// Steps taken (`None` while a step runs).
    pub step_count: Option<u32>,
    /// Step limit.
    pub max_steps: u32,
    /// Seconds since it opened.
    pub age_secs: f64,
    /// Seconds since its last request.
    pub idle_secs: f64,
}
