//! Writing a finished episode: outcome, screenshots, steps and verdicts in one transaction,
//! fenced by the runner's lease; and the model judge's verdict cache.

use std::time::Duration;

use serde::Serialize;
use spaces::Screen;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::StepCore;
use crate::state::EpisodeStatus;
use crate::{Blob, PolicyCard, Store, StoreError, ms, sanitize};

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The agent answered.
    Answered,
    /// The agent stopped without an answer.
    Stopped,
    /// It ran out of steps.
    MaxSteps,
    /// The policy kept failing to produce an action.
    PolicyError,
    /// Cut off by the campaign's time limit.
    Timeout,
    /// The environment (e.g. MiniWoB++) declared the episode done.
    EnvDone,
}

impl EndReason {
    /// Name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Answered => "answered",
            EndReason::Stopped => "stopped",
            EndReason::MaxSteps => "max_steps",
            EndReason::PolicyError => "policy_error",
            EndReason::Timeout => "timeout",
            EndReason::EnvDone => "env_done",
        }
    }
}

/// One step, as the runner records it: the fields every step stores, and the click and
/// tokens as the runner has them (the columns hold them as [`super::StepView`] reads them).
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// What was seen, what was done, how long it took.
    pub core: StepCore,
    /// Where it clicked.
    pub click: Option<(f64, f64)>,
    /// Per-token log-probabilities.
    pub token_logprobs: Vec<f32>,
    /// The generated tokens' ids, paired with `token_logprobs` (or empty).
    pub token_ids: Vec<u32>,
}

/// A verdict to store.
#[derive(Debug, Clone)]
pub struct VerdictRecord {
    /// Judge name.
    pub judge: String,
    /// Group.
    pub group_id: String,
    /// Fact.
    pub fact_id: String,
    /// What the judge found, or that it did not look.
    pub outcome: VerdictOutcome,
}

/// A stored fact's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerdictOutcome {
    /// Verified.
    Checked {
        /// Holds?
        passed: bool,
        /// What was seen.
        evidence: String,
        /// Why.
        reason: String,
    },
    /// Not checked: binary judging stopped once the success label was settled.
    Skipped,
}

/// Everything a finished episode stores, written in one transaction.
#[derive(Debug, Clone)]
pub struct EpisodeRecord {
    /// The episode.
    pub id: Uuid,
    /// How it ended.
    pub end_reason: EndReason,
    /// The instruction the episode ran with, when the environment generated it.
    pub instruction: Option<String>,
    /// Final answer.
    pub final_answer: Option<String>,
    /// Last URL.
    pub final_url: Option<String>,
    /// Screenshot of the final page.
    pub final_screenshot: Option<String>,
    /// What the rubric read on the final page (JSON), for judging again later.
    pub final_page: Option<serde_json::Value>,
    /// Steps in order.
    pub steps: Vec<StepRecord>,
    /// Verdicts in rubric order, unchecked facts included.
    pub verdicts: Vec<VerdictRecord>,
    /// Screenshots the steps and final page refer to.
    pub blobs: Vec<Blob>,
    /// Judged successful (ignored when `judge_error` is set).
    pub success: bool,
    /// Partial credit (a lower bound when facts were left unchecked).
    pub credit: rubrics::Credit,
    /// Wall time.
    pub duration: Duration,
    /// Time the judge took (`None`: not measured).
    pub judge_time: Option<Duration>,
    /// Of `duration`, the wait for a session slot on the start domain (`None`: the pool
    /// capped nothing).
    pub politeness_wait: Option<Duration>,
    /// The recording its exchanges go to, with them (a recording campaign's episode).
    pub recorded: Option<(Uuid, Vec<crate::ExchangeRecord>)>,
    /// Requests its replay could not answer from the recording (`None`: not a replay).
    pub unmatched_requests: Option<u64>,
    /// Model-judge calls made (questions asked: not cache hits, not blocking pages).
    pub judge_calls: i32,
    /// Facts in the rubric that need the model judge.
    pub judge_facts: i32,
    /// Model-judge calls an exhaustive judge makes on this episode.
    pub judge_exhaustive_calls: i32,
    /// What its pages rendered at (`None`: its campaign's screen).
    pub screen: Option<Screen>,
    /// The policy that ran it, as its worker resolved the campaign's policy name.
    pub policy: Option<PolicyCard>,
    /// Every web page its tabs loaded, in order (what `"scope": "any"` URL checks read).
    pub visited_urls: Vec<String>,
    /// The rubric could not be evaluated (its own error, not the agent's): stored without
    /// success or score.
    pub judge_error: Option<String>,
}

impl Store {
    /// Stores a finished episode (outcome, screenshots, steps, verdicts) atomically.
    /// Returns false, and stores nothing, when `owner` no longer holds the lease.
    pub async fn finish_episode(
        &self,
        owner: &str,
        rec: &EpisodeRecord,
    ) -> Result<bool, StoreError> {
        // Postgres refuses NUL in text; pages and models produce it.
        if sanitize::needs_cleaning(rec) {
            return self
                .write_finished(owner, &sanitize::cleaned(rec), &rec.blobs)
                .await;
        }
        self.write_finished(owner, rec, &rec.blobs).await
    }

    async fn write_finished(
        &self,
        owner: &str,
        rec: &EpisodeRecord,
        blobs: &[Blob],
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE episodes SET status = $24, end_reason = $3, success = $4, score = $5,
                final_answer = $6, final_url = $7, final_screenshot = $8, steps = $9, duration_ms = $10,
                finished_at = now(), finished_by = $2, lease_owner = NULL, lease_expires_at = NULL,
                instruction = $11, judge_calls = $12, judge_facts = $13, final_page = $14,
                score_of_verified = $15, judge_exhaustive_calls = $16, screen = $17, policy = $18,
                visited_urls = $19, judge_error = $20, judge_ms = $21, politeness_ms = $22,
                unmatched_requests = $23
             WHERE id = $1 AND lease_owner = $2 AND status = $25",
        )
        .bind(rec.id)
        .bind(owner)
        .bind(rec.end_reason.as_str())
        .bind(rec.judge_error.is_none().then_some(rec.success))
        .bind(rec.judge_error.is_none().then(|| rec.credit.score()))
        .bind(&rec.final_answer)
        .bind(&rec.final_url)
        .bind(&rec.final_screenshot)
        .bind(i32::try_from(rec.steps.len()).unwrap_or(i32::MAX))
        .bind(ms(rec.duration))
        .bind(&rec.instruction)
        .bind(rec.judge_calls)
        .bind(rec.judge_facts)
        .bind(&rec.final_page)
        .bind(rec.credit.of_verified().filter(|_| rec.judge_error.is_none()))
        .bind(rec.judge_exhaustive_calls)
        .bind(rec.screen.map(sqlx::types::Json))
        .bind(rec.policy.as_ref().map(sqlx::types::Json))
        .bind(&rec.visited_urls)
        .bind(&rec.judge_error)
        .bind(rec.judge_time.map(ms))
        .bind(rec.politeness_wait.map(ms))
        .bind(
            rec.unmatched_requests
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
        .bind(EpisodeStatus::Finished)
        .bind(EpisodeStatus::Running)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        // A few MB per statement at most: an episode's screenshots.
        for chunk in blobs.chunks(16) {
            let mut q = QueryBuilder::new("INSERT INTO blobs (hash, mime, bytes) ");
            q.push_values(chunk, |mut b, blob| {
                b.push_bind(&blob.hash)
                    .push_bind(&blob.mime)
                    .push_bind(&blob.bytes);
            });
            q.push(" ON CONFLICT (hash) DO NOTHING");
            q.build().execute(&mut *tx).await?;
        }
        if !rec.steps.is_empty() {
            let mut q = QueryBuilder::new(
                "INSERT INTO steps (episode_id, idx, url, title, screenshot, elements, action, thought, raw_output,
                    action_error, click_x, click_y, logprob, token_logprobs, observe_ms, policy_ms, act_ms,
                    events, tabs, prompt, token_ids, ax_tree) ",
            );
            q.push_values(rec.steps.iter().enumerate(), |mut b, (i, s)| {
                b.push_bind(rec.id)
                    .push_bind(i32::try_from(i).unwrap_or(i32::MAX))
                    .push_bind(&s.core.url)
                    .push_bind(&s.core.title)
                    .push_bind(&s.core.screenshot)
                    .push_bind(&s.core.elements)
                    .push_bind(&s.core.action)
                    .push_bind(&s.core.thought)
                    .push_bind(&s.core.raw_output)
                    .push_bind(&s.core.action_error)
                    .push_bind(s.click.map(|c| c.0 as f32))
                    .push_bind(s.click.map(|c| c.1 as f32))
                    .push_bind(s.core.logprob)
                    .push_bind((!s.token_logprobs.is_empty()).then(|| s.token_logprobs.clone()))
                    .push_bind(s.core.observe_ms)
                    .push_bind(s.core.policy_ms)
                    .push_bind(s.core.act_ms)
                    .push_bind(&s.core.events)
                    .push_bind(&s.core.tabs)
                    .push_bind(&s.core.prompt)
                    .push_bind(ids_column(&s.token_ids))
                    .push_bind(s.core.ax_tree.as_deref().map(super::bounded_ax_tree));
            });
            q.build().execute(&mut *tx).await?;
        }
        if !rec.verdicts.is_empty() {
            let mut q = QueryBuilder::new(
                "INSERT INTO verdicts (episode_id, judge, group_id, fact_id, ord, passed, evidence, reason) ",
            );
            q.push_values(rec.verdicts.iter().enumerate(), |mut b, (i, v)| {
                let (passed, evidence, reason) = match &v.outcome {
                    VerdictOutcome::Checked {
                        passed,
                        evidence,
                        reason,
                    } => (Some(*passed), evidence.as_str(), reason.as_str()),
                    VerdictOutcome::Skipped => (None, "", ""),
                };
                b.push_bind(rec.id)
                    .push_bind(&v.judge)
                    .push_bind(&v.group_id)
                    .push_bind(&v.fact_id)
                    .push_bind(i32::try_from(i).unwrap_or(i32::MAX))
                    .push_bind(passed)
                    .push_bind(evidence.to_string())
                    .push_bind(reason.to_string());
            });
            q.build().execute(&mut *tx).await?;
        }
        if let Some((recording, exchanges)) = &rec.recorded {
            crate::recordings::insert(&mut tx, *recording, Some(rec.id), exchanges).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Caches a model-judge verdict. Episodes not (yet) stored are not cached.
    pub async fn cache_verdict(
        &self,
        episode: Uuid,
        trajectory: &str,
        fact: &str,
        judge: &str,
        v: &(bool, String, String),
    ) -> Result<(), StoreError> {
        let clean = |s: &str| s.replace('\0', "\u{FFFD}");
        sqlx::query(
            "INSERT INTO judge_cache (episode_id, trajectory, fact_id, judge, passed, evidence, reason)
             SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM episodes WHERE id = $1)
             ON CONFLICT DO NOTHING",
        )
        .bind(episode)
        .bind(trajectory)
        .bind(fact)
        .bind(judge)
        .bind(v.0)
        .bind(clean(&v.1))
        .bind(clean(&v.2))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Token ids as an `integer[]` value: NULL when there are none, or when one does not fit
/// (no vocabulary comes near 2^31; ids are never stored truncated).
fn ids_column(ids: &[u32]) -> Option<Vec<i32>> {
    if ids.is_empty() {
        return None;
    }
    ids.iter().map(|&id| i32::try_from(id).ok()).collect()
}
