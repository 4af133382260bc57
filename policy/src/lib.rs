//! Policies: what chooses the next action. The [`Policy`] trait is the seam every backend
//! implements (scripted, random, the solvers, ONNX and HTTP models), with their prompts
//! and output parsing; [`traces`] reads stored episodes back as training data, each
//! step's model inputs rebuilt.
//!
//! Must not touch: the runner, campaigns or the judge (`engine`'s), SQL (`store`'s), HTTP
//! handlers. Depends on `inference`, `spaces` (through `browser-pool`'s re-exports), the
//! task model and `store`'s data types.

mod agent_like;
mod batcher;
mod card;
mod constant;
mod demonstrated;
pub mod follow;
pub mod http;
pub mod miniwob;
pub mod onnx;
pub mod output;
mod random;
mod scripted;
mod simulated;
pub mod traces;

use std::collections::BTreeMap;
use std::sync::Arc;

use store::PolicyCard;

use browser_pool::{Action, Observation};
use futures::FutureExt;
use futures::future::BoxFuture;
use tasks::Task;

pub use agent_like::AgentLike;
pub use batcher::{BatchBackend, BatchLimits, Batched, CloseReason, take_batch};
pub use card::fingerprint;
pub use constant::ConstantPolicy;
pub use demonstrated::{Demonstrated, Written};
pub use random::RandomPolicy;
pub use scripted::ScriptedPolicy;
pub use simulated::{LatencyModel, SimulatedLatency};

/// A step already taken in this episode, as policies see history.
#[derive(Debug, Clone)]
pub struct PastStep {
    /// What the policy saw at that step (kept for the last few steps only).
    pub observation: Option<Arc<Observation>>,
    /// Content hash of that step's screenshot (to tell whether the page changed).
    pub screenshot: String,
    /// The policy's reasoning at that step.
    pub thought: Option<String>,
    /// The action line.
    pub action: String,
    /// URL when it was chosen.
    pub url: String,
    /// Title when it was chosen.
    pub title: String,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Everything a policy may look at to choose one action. Owned (cheap `Arc` clones) so a
/// request can wait in a batching queue.
#[derive(Debug, Clone)]
pub struct StepInput {
    /// The task.
    pub task: Arc<Task>,
    /// What the agent is asked to do: the task's instruction, or the one its environment
    /// generated for this episode (MiniWoB++ utterances).
    pub instruction: Arc<str>,
    /// The current observation.
    pub observation: Arc<Observation>,
    /// Earlier steps of the episode.
    pub history: Arc<[PastStep]>,
    /// Index of this step, from 0.
    pub step: u32,
    /// The episode's step limit.
    pub max_steps: u32,
    /// The episode's seed (sampling policies must be reproducible from it).
    pub seed: u64,
    /// The agent's last answer, when it has answered and the campaign lets it answer
    /// again (`answer_checks` > 1): prompts ask it to check the page and confirm or
    /// correct it.
    pub answered: Option<Arc<str>>,
}

/// A policy's choice.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The parsed action, or why the output is not one.
    pub action: Result<Action, String>,
    /// The raw output (for model policies, the generated text).
    pub raw_output: String,
    /// Reasoning shown in replays.
    pub thought: Option<String>,
    /// Log-probability of the generated action, when the backend knows it.
    pub logprob: Option<f64>,
    /// Per-token log-probabilities of the generated action.
    pub token_logprobs: Vec<f32>,
    /// The generated tokens' ids in the model's vocabulary, paired with `token_logprobs`
    /// (same length) when the backend reports them, else empty. With `prompt`, what a
    /// trainer rescores exactly, where re-tokenizing `raw_output` may not give back the
    /// sampled tokens.
    pub token_ids: Vec<u32>,
    /// What a model policy was given, as text: ONNX policies the chat-template-rendered
    /// prompt with one placeholder per image, HTTP policies the user message's text (the
    /// server applies its own template). What `token_logprobs` are conditioned on.
    pub prompt: Option<String>,
}

impl Decision {
    /// A decision with a known action and no model internals.
    pub fn action(action: Action, thought: impl Into<String>) -> Decision {
        Decision {
            raw_output: action.to_string(),
            action: Ok(action),
            thought: Some(thought.into()),
            logprob: None,
            token_logprobs: Vec::new(),
            token_ids: Vec::new(),
            prompt: None,
        }
    }
}

/// Why a policy produced nothing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PolicyError {
    /// The backend is down or overloaded: an infrastructure failure, retried.
    #[error("policy backend unavailable: {0}")]
    Unavailable(String),
    /// The backend ran but failed on this input.
    #[error("policy failed: {0}")]
    Failed(String),
}

/// Chooses actions.
pub trait Policy: Send + Sync {
    /// The name campaigns refer to it by.
    fn name(&self) -> &str;

    /// Chooses the next action of one episode.
    fn decide(&self, input: StepInput) -> BoxFuture<'_, Result<Decision, PolicyError>>;

    /// What this policy is (backend, model, sampling), stored with every episode it runs.
    /// Model backends override it; a built-in policy is its name.
    fn card(&self) -> PolicyCard {
        PolicyCard::new(self.name(), "builtin")
    }

    /// Whether the backend already retries an unavailable server itself (with its own
    /// backoff) before answering [`PolicyError::Unavailable`]; the episode then does not
    /// retry the call again on top, which would multiply the attempts.
    fn retries_own_calls(&self) -> bool {
        false
    }

    /// Whether the runner should resolve this policy's CSS-selector targets to the
    /// element numbers the observation listed, and give the renumbered decision back
    /// through [`Policy::renumbered`] before the step is recorded. Demonstrations need it:
    /// a reference solution names elements by selector, a model's actions by number.
    fn wants_numbers(&self) -> bool {
        false
    }

    /// `decision`, made for `input`, with its action's selector targets replaced by the
    /// numbers they had in the observation (called only when [`Policy::wants_numbers`],
    /// and only when at least one target was renumbered).
    fn renumbered(&self, input: StepInput, decision: Decision) -> BoxFuture<'_, Decision> {
        let _ = input;
        async move { decision }.boxed()
    }

    /// The policy an episode starting now keeps to its end, when that is not this one: a
    /// policy following a version link gives its current version, so an episode in flight
    /// is never switched to weights promoted after it started.
    fn pinned(&self) -> Option<Arc<dyn Policy>> {
        None
    }

    /// Chooses for several episodes at once (lockstep rollouts make one such call per
    /// step). Batched backends override it; by default each input is decided on its own,
    /// concurrently.
    fn decide_batch(
        &self,
        inputs: Vec<StepInput>,
    ) -> BoxFuture<'_, Vec<Result<Decision, PolicyError>>> {
        futures::future::join_all(inputs.into_iter().map(|i| self.decide(i))).boxed()
    }
}

/// The policies a campaign may name.
#[derive(Clone, Default)]
pub struct PolicyRegistry {
    policies: BTreeMap<String, Arc<dyn Policy>>,
}

/// Share of `agent-sim`'s episodes that solve their task: about what current web agents
/// reach on WebGym-style tasks, so failures (which run to the horizon) are common.
const AGENT_SIM_SOLVES: f64 = 0.5;

impl PolicyRegistry {
    /// The built-in policies: `scripted`, `random` and `miniwob-solver`.
    pub fn builtin() -> PolicyRegistry {
        let mut r = PolicyRegistry::default();
        r.register(Arc::new(ScriptedPolicy));
        r.register(Arc::new(RandomPolicy));
        r.register(Arc::new(miniwob::MiniWobSolver));
        r
    }

    /// The built-in policies plus `scripted-sim`, `random-sim` and `agent-sim` (half its
    /// episodes solved, the rest wandering to the horizon, see [`AgentLike`]): the same
    /// choices behind a simulated model server's latency (for measuring the engine without
    /// a GPU).
    pub fn with_simulated(model: LatencyModel) -> PolicyRegistry {
        let mut r = PolicyRegistry::builtin();
        r.register(Arc::new(SimulatedLatency::new(
            "scripted-sim",
            Arc::new(ScriptedPolicy),
            model,
        )));
        r.register(Arc::new(SimulatedLatency::new(
            "random-sim",
            Arc::new(RandomPolicy),
            model,
        )));
        r.register(Arc::new(SimulatedLatency::new(
            "agent-sim",
            Arc::new(AgentLike::new(AGENT_SIM_SOLVES)),
            model,
        )));
        r
    }

    /// Adds (or replaces) a policy under its name.
    pub fn register(&mut self, policy: Arc<dyn Policy>) {
        self.policies.insert(policy.name().to_string(), policy);
    }

    /// Removes a policy.
    pub fn remove(&mut self, name: &str) {
        self.policies.remove(name);
    }

    /// Looks a policy up.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Policy>> {
        self.policies.get(name).cloned()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.policies.keys().cloned().collect()
    }
}
