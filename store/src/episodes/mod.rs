//! Episode rows: claiming with leases ([`lease`]), atomic completion ([`write`]), and the
//! replay read models ([`read`]). A step is written as a [`StepRecord`] and read back as a
//! [`StepView`]; both carry the same [`StepCore`].

mod ax_tree;
mod lease;
mod read;
mod write;

use serde::Serialize;

pub use ax_tree::{AX_TREE_LIMIT, bounded as bounded_ax_tree};
pub use lease::ClaimedEpisode;
pub use read::{EpisodeDetail, EpisodeFilter, EpisodeKey, EpisodeSummary, StepView, VerdictView};
pub use write::{EndReason, EpisodeRecord, StepRecord, VerdictOutcome, VerdictRecord};

/// What every step stores, written and read alike: what the policy saw, what it did, and
/// how long each part took.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct StepCore {
    /// URL observed.
    pub url: String,
    /// Title observed.
    pub title: String,
    /// Screenshot blob hash (`/api/blobs/{hash}`).
    pub screenshot: Option<String>,
    /// The numbered elements shown to the policy.
    pub elements: serde_json::Value,
    /// Page events since the previous observation (`spaces::PageEvent` as JSON):
    /// dialogs, tabs, downloads, blocked URLs.
    pub events: serde_json::Value,
    /// Open tabs at observation time (`spaces::TabInfo` as JSON).
    pub tabs: serde_json::Value,
    /// Chromium's accessibility tree as the policy was shown it (text, one node a line,
    /// numbered elements as `[N] role "name"`), when the browser config recorded it
    /// (`accessibility_tree`, CLI `--ax-tree`); stored at most [`AX_TREE_LIMIT`] bytes.
    pub ax_tree: Option<String>,
    /// Canonical action line (or the raw output when it did not parse).
    pub action: String,
    /// The policy's reasoning.
    pub thought: Option<String>,
    /// The policy's raw output.
    pub raw_output: Option<String>,
    /// Why the action failed.
    pub action_error: Option<String>,
    /// Log-probability of the action.
    pub logprob: Option<f64>,
    /// The text a model policy was given (template applied, a placeholder per image; see
    /// `policy::Decision::prompt`).
    pub prompt: Option<String>,
    /// Time to observe, ms.
    pub observe_ms: i32,
    /// Time the policy took, ms.
    pub policy_ms: i32,
    /// Time to act and settle, ms.
    pub act_ms: i32,
}
