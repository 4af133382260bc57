//! What a client asks of a session: the task, the seed, the dialect and what each
//! observation carries; who the client is; and the limits a server sets.

use std::time::Duration;

use browser_pool::Screen;
use serde::{Deserialize, Serialize};
use tasks::Task;
use uuid::Uuid;

/// The longest step limit a session may ask for.
pub const MAX_SESSION_STEPS: u32 = 100;

/// How a session's client writes actions and reads observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// surfgym's own action grammar and observation keys.
    #[default]
    Surfgym,
    /// BrowserGym's action strings (`click('12')`) and observation keys.
    Browsergym,
}

/// What each observation of a session carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObserveOptions {
    /// The viewport as an image.
    pub screenshot: bool,
    /// A second screenshot with the element numbers drawn on it.
    pub set_of_marks: bool,
    /// The numbered interactive elements.
    pub elements: bool,
    /// The accessibility tree as text.
    pub ax_tree: bool,
    /// The screen the pages render at (the task's own wins, as in campaigns).
    pub screen: Option<Screen>,
}

impl Default for ObserveOptions {
    fn default() -> ObserveOptions {
        ObserveOptions {
            screenshot: true,
            set_of_marks: false,
            elements: true,
            ax_tree: false,
            screen: None,
        }
    }
}

/// Which task a session runs.
#[derive(Debug, Clone)]
pub enum TaskChoice {
    /// A registered task, by id.
    Registered(String),
    /// A task given with the request (validated by the caller), registered before it runs
    /// unless a task with its id exists already.
    Inline(Box<Task>),
}

/// A request to open a session, validated at the API's edge.
#[derive(Debug, Clone)]
pub struct OpenRequest {
    /// The task.
    pub task: TaskChoice,
    /// The environment's seed.
    pub seed: u64,
    /// Step limit (at most [`MAX_SESSION_STEPS`]); `None`: the task's, else 15.
    pub max_steps: Option<u32>,
    /// Action and observation dialect.
    pub dialect: Dialect,
    /// What observations carry.
    pub observe: ObserveOptions,
}

/// Who drives a session: an API token, or the loopback user who needs none.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Client {
    /// Stable key: the token's id, or `local`.
    pub key: String,
    /// Shown in the interactive campaign's name.
    pub name: String,
}

impl Client {
    /// The loopback user, when the server asks no token.
    pub fn local() -> Client {
        Client {
            key: "local".into(),
            name: "local".into(),
        }
    }

    /// Its interactive campaign's id: the same for every session it opens, on any server.
    pub fn campaign_id(&self) -> Uuid {
        Uuid::new_v5(
            &Uuid::NAMESPACE_OID,
            format!("surfgym-interactive:{}", self.key).as_bytes(),
        )
    }
}

/// Limits on sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Open sessions at once, in all.
    pub max_sessions: usize,
    /// Open sessions at once, per client.
    pub per_client: usize,
    /// A session without a request for this long is ended and stored.
    pub idle: Duration,
    /// The longest one step may take; past it the session fails.
    pub step: Duration,
}

impl SessionLimits {
    /// Defaults for a pool of `contexts` browser contexts.
    pub fn for_pool(contexts: usize) -> SessionLimits {
        SessionLimits {
            max_sessions: contexts.max(1),
            per_client: contexts.max(1),
            idle: Duration::from_secs(300),
            step: Duration::from_secs(60),
        }
    }
}
