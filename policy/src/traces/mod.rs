//! Recorded episodes as training data: the steps a model policy took, with what it was
//! given and what it sampled, read from the store (campaign ids) or from `surfgym export`
//! JSON Lines, and each step's decoder inputs rebuilt exactly as the policy had them.
//!
//! Both sources go through one schema, [`TraceEpisode`] (the export's, so a file written
//! by `surfgym export` and the campaign it came from give the same samples). This module
//! owns reading and replaying traces; choosing steps, losses and weights are the
//! trainer's, and it must never write to the store.

mod load;
mod replay;
mod requested;

use std::path::PathBuf;

use browser_pool::{Element, Screen, TabInfo};
use serde::Deserialize;
use uuid::Uuid;

pub use load::{Blobs, from_campaigns, read_jsonl};
pub use replay::{ReplaySettings, Replayer, Screenshots, Shown, StepInputs};
pub use requested::{Requested, requested};

use store::{PolicyCard, StoreError};

/// A finished episode as training reads it (a subset of the export's fields).
#[derive(Debug, Clone, Deserialize)]
pub struct TraceEpisode {
    /// Identifier.
    pub id: Uuid,
    /// Campaign.
    pub campaign_id: Uuid,
    /// Task (with the campaign and the seed, GRPO's group).
    pub task_id: String,
    /// The episode's seed: with the task, the instance its samples share (0 in exports
    /// written before it was exported).
    #[serde(default)]
    pub seed: i64,
    /// Website of the task.
    pub site: String,
    /// `finished` for every episode the export writes.
    pub status: store::EpisodeStatus,
    /// Judged successful.
    pub success: Option<bool>,
    /// Partial credit.
    pub score: Option<f64>,
    /// Final answer.
    pub final_answer: Option<String>,
    /// Final page screenshot hash.
    pub final_screenshot: Option<String>,
    /// What the pages rendered at.
    pub screen: Option<Screen>,
    /// The policy that ran it.
    pub policy: Option<PolicyCard>,
    /// Steps in order.
    pub steps: Vec<TraceStep>,
}

/// One recorded step.
#[derive(Debug, Clone, Deserialize)]
pub struct TraceStep {
    /// Index from 0.
    pub idx: i32,
    /// URL observed.
    pub url: String,
    /// Title observed.
    pub title: String,
    /// Screenshot blob hash (sha256 of its bytes).
    pub screenshot: Option<String>,
    /// The export's copy of that screenshot (`--screenshots DIR`).
    #[serde(default)]
    pub screenshot_file: Option<PathBuf>,
    /// The numbered elements shown to the policy.
    #[serde(default)]
    pub elements: Vec<Element>,
    /// Open tabs.
    #[serde(default)]
    pub tabs: Vec<TabInfo>,
    /// The text the model policy was given (template applied, one placeholder per image).
    pub prompt: Option<String>,
    /// What the model wrote (the text of the sampled tokens).
    #[serde(default)]
    pub raw_output: Option<String>,
    /// Sampled token ids.
    pub token_ids: Option<Vec<i32>>,
    /// Their log-probabilities under the policy that sampled them.
    pub token_logprobs: Option<Vec<f32>>,
}

impl TraceEpisode {
    /// The reward GRPO and the filters read: 1 for a judged success, else 0; with
    /// `partial`, the judged score (partial credit) instead.
    pub fn reward(&self, partial: bool) -> f64 {
        let success = f64::from(u8::from(self.success == Some(true)));
        if partial {
            self.score.unwrap_or(success)
        } else {
            success
        }
    }
}

impl TraceStep {
    /// The sampled tokens with their log-probabilities, when the policy reported both,
    /// paired one to one.
    pub fn tokens(&self) -> Option<(Vec<u32>, &[f32])> {
        let (ids, lps) = (self.token_ids.as_ref()?, self.token_logprobs.as_ref()?);
        if ids.is_empty() || ids.len() != lps.len() {
            return None;
        }
        let ids = ids
            .iter()
            .map(|&i| u32::try_from(i).ok())
            .collect::<Option<Vec<u32>>>()?;
        Some((ids, lps))
    }
}

/// Why traces could not be read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of a JSON Lines file is not an exported episode.
    #[error("{path}, line {line}: {message}")]
    Line {
        /// The file.
        path: String,
        /// From 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A step cannot be replayed as the policy saw it.
    #[error("episode {episode}, step {step}: {message}")]
    Step {
        /// The episode.
        episode: Uuid,
        /// The step.
        step: i32,
        /// What is missing or wrong.
        message: String,
    },
    /// No campaign with this id.
    #[error("no campaign {0} (see `surfgym campaign list`)")]
    NoCampaign(Uuid),
}
