//! Episode rows: claiming with leases, atomic completion, and the replay read models.

use std::time::Duration;

use browser_pool::Screen;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::{Store, StoreError};
use crate::policy::PolicyCard;

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

/// An episode a runner has leased.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedEpisode {
    /// Identifier.
    pub id: Uuid,
    /// Task to run.
    pub task_id: String,
    /// Rollout index.
    pub rollout: i32,
    /// Policy seed.
    pub seed: i64,
    /// Attempts so far, this one included.
    pub attempts: i32,
    /// Why the previous attempt failed, if one did.
    pub last_error: Option<String>,
}

/// One step, as the runner records it.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// URL observed.
    pub url: String,
    /// Title observed.
    pub title: String,
    /// Screenshot blob hash.
    pub screenshot: Option<String>,
    /// The numbered elements shown to the policy.
    pub elements: serde_json::Value,
    /// Page events since the previous observation (`browser_pool::PageEvent` as JSON).
    pub events: serde_json::Value,
    /// Open tabs at observation time (`browser_pool::TabInfo` as JSON).
    pub tabs: serde_json::Value,
    /// Canonical action line (or the raw output when it did not parse).
    pub action: String,
    /// The policy's reasoning.
    pub thought: Option<String>,
    /// The policy's raw output.
    pub raw_output: Option<String>,
    /// Why the action failed.
    pub action_error: Option<String>,
    /// Where it clicked.
    pub click: Option<(f64, f64)>,
    /// Log-probability of the action.
    pub logprob: Option<f64>,
    /// Per-token log-probabilities.
    pub token_logprobs: Vec<f32>,
    /// The generated tokens' ids, paired with `token_logprobs` (or empty).
    pub token_ids: Vec<u32>,
    /// The model's prompt text (see `policy::Decision::prompt`).
    pub prompt: Option<String>,
    /// Time to observe, ms.
    pub observe_ms: i32,
    /// Time the policy took, ms.
    pub policy_ms: i32,
    /// Time to act and settle, ms.
    pub act_ms: i32,
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
    pub blobs: Vec<super::Blob>,
    /// Judged successful.
    pub success: bool,
    /// Partial credit (a lower bound when facts were left unchecked).
    pub credit: rubrics::Credit,
    /// Wall time.
    pub duration: Duration,
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
}

/// Which episodes to list.
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    /// Campaign.
    pub campaign: Option<Uuid>,
    /// Task.
    pub task: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Success.
    pub success: Option<bool>,
    /// The task's split (`train` or `test`).
    pub split: Option<String>,
}

impl EpisodeFilter {
    /// Every episode of one campaign.
    pub fn campaign(id: Uuid) -> EpisodeFilter {
        EpisodeFilter {
            campaign: Some(id),
            ..Default::default()
        }
    }
}

/// An episode in a list.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EpisodeSummary {
    /// Identifier.
    pub id: Uuid,
    /// Campaign.
    pub campaign_id: Uuid,
    /// Task.
    pub task_id: String,
    /// Website of the task.
    pub site: String,
    /// The task's split: `train` or `test`.
    pub split: String,
    /// Rollout index.
    pub rollout: i32,
    /// Seed.
    pub seed: i64,
    /// pending, running, finished or failed.
    pub status: String,
    /// How it ended.
    pub end_reason: Option<String>,
    /// Judged successful.
    pub success: Option<bool>,
    /// Partial credit; a lower bound when `score_of_verified` is set.
    pub score: Option<f64>,
    /// Partial credit over the verified facts, when binary judging left facts unchecked
    /// (then `score` counts them as not earned); null when every fact was verified.
    pub score_of_verified: Option<f64>,
    /// Final answer.
    pub final_answer: Option<String>,
    /// Steps taken (`step_count` on the wire: the replay's `steps` is the step list).
    #[serde(rename = "step_count")]
    pub steps: i32,
    /// Attempts made.
    pub attempts: i32,
    /// Last infrastructure error.
    pub last_error: Option<String>,
    /// Wall time, ms.
    pub duration_ms: Option<i32>,
    /// Started.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// One step in a replay.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct StepView {
    /// Index from 0.
    pub idx: i32,
    /// URL.
    pub url: String,
    /// Title.
    pub title: String,
    /// Screenshot hash (`/api/blobs/{hash}`).
    pub screenshot: Option<String>,
    /// Numbered elements.
    pub elements: serde_json::Value,
    /// Page events since the previous step: dialogs, tabs, downloads, blocked URLs.
    pub events: serde_json::Value,
    /// Open tabs.
    pub tabs: serde_json::Value,
    /// Action.
    pub action: String,
    /// Thought.
    pub thought: Option<String>,
    /// Raw output.
    pub raw_output: Option<String>,
    /// Action error.
    pub action_error: Option<String>,
    /// Click x.
    pub click_x: Option<f32>,
    /// Click y.
    pub click_y: Option<f32>,
    /// Action log-probability.
    pub logprob: Option<f64>,
    /// Log-probability of each generated token of `raw_output`, when the policy reported
    /// them (what a trainer needs for importance ratios).
    pub token_logprobs: Option<Vec<f32>>,
    /// The id of each generated token of `raw_output` in the model's vocabulary, paired
    /// with `token_logprobs`, when the policy reported them.
    pub token_ids: Option<Vec<i32>>,
    /// The text a model policy was given (template applied, a placeholder per image).
    pub prompt: Option<String>,
    /// Observe time, ms.
    pub observe_ms: i32,
    /// Policy time, ms.
    pub policy_ms: i32,
    /// Act time, ms.
    pub act_ms: i32,
}

/// One verdict in a replay.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct VerdictView {
    /// Judge.
    pub judge: String,
    /// Group.
    pub group_id: String,
    /// Fact.
    pub fact_id: String,
    /// Fact description from the rubric.
    pub description: Option<String>,
    /// Holds? Null when the fact was not checked (binary judging stopped early); its
    /// evidence and reason are then empty.
    pub passed: Option<bool>,
    /// What was seen.
    pub evidence: String,
    /// Why.
    pub reason: String,
}

/// A whole episode for replay.
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeDetail {
    /// The summary fields.
    #[serde(flatten)]
    pub summary: EpisodeSummary,
    /// The task's instruction.
    pub instruction: String,
    /// Final URL.
    pub final_url: Option<String>,
    /// Final page screenshot.
    pub final_screenshot: Option<String>,
    /// What the pages rendered at (recorded with the episode: its task's screen or its
    /// campaign's; before episodes recorded it, the campaign's; `None` for campaigns stored
    /// before campaigns recorded it). Element boxes and clicks are in its CSS pixels.
    pub screen: Option<Screen>,
    /// The policy that ran it (backend, model, fingerprint, sampling); `None` for
    /// episodes stored before episodes recorded it.
    pub policy: Option<PolicyCard>,
    /// Steps in order.
    pub steps: Vec<StepView>,
    /// Verdicts in rubric order, unchecked facts included.
    pub verdicts: Vec<VerdictView>,
}

/// Where an episode sits in campaign order (task, rollout, id).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EpisodeKey {
    /// Task.
    pub task_id: String,
    /// Rollout index.
    pub rollout: i32,
    /// Identifier.
    pub id: Uuid,
}

/// `WHERE` clauses of an [`EpisodeFilter`] over `episodes e JOIN tasks t`.
fn push_filter(q: &mut QueryBuilder<'_, sqlx::Postgres>, f: &EpisodeFilter) {
    q.push(" WHERE true");
    if let Some(c) = f.campaign {
        q.push(" AND e.campaign_id = ").push_bind(c);
    }
    if let Some(t) = &f.task {
        q.push(" AND e.task_id = ").push_bind(t.clone());
    }
    if let Some(s) = &f.status {
        q.push(" AND e.status = ").push_bind(s.clone());
    }
    if let Some(s) = f.success {
        q.push(" AND e.success = ").push_bind(s);
    }
    if let Some(s) = &f.split {
        q.push(" AND t.split = ").push_bind(s.clone());
    }
}

const SUMMARY: &str = "SELECT e.id, e.campaign_id, e.task_id, t.site, t.split, e.rollout, e.seed, e.status, e.end_reason,
        e.success, e.score, e.score_of_verified, e.final_answer, e.steps, e.attempts, e.last_error, e.duration_ms, e.started_at, e.finished_at
    FROM episodes e JOIN tasks t ON t.id = e.task_id";

fn ms(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

impl Store {
    /// Leases the next runnable episode of a campaign, longest expected first: pending
    /// ones, and running ones whose lease expired (their runner died). `SKIP LOCKED` lets any number of runners claim
    /// concurrently without handing one episode to two of them.
    pub async fn claim_episode(
        &self,
        campaign: Uuid,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<ClaimedEpisode>, StoreError> {
        Ok(sqlx::query_as(
            "UPDATE episodes e SET status = 'running', lease_owner = $2,
                lease_expires_at = now() + make_interval(secs => $3), attempts = e.attempts + 1,
                started_at = now()
             WHERE e.id = (
                SELECT p.id FROM episodes p JOIN tasks t ON t.id = p.task_id
                WHERE p.campaign_id = $1
                  AND (p.status = 'pending' OR (p.status = 'running' AND p.lease_expires_at < now()))
                -- Longest expected first (a task's step limit is the proxy): long episodes
                -- started last would otherwise run alone at the end of the campaign.
                ORDER BY coalesce((t.spec->>'max_steps')::int, 15) DESC, p.rollout, p.task_id
                FOR UPDATE OF p SKIP LOCKED
                LIMIT 1)
             RETURNING e.id, e.task_id, e.rollout, e.seed, e.attempts, e.last_error",
        )
        .bind(campaign)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Extends a lease; false when the runner no longer holds it.
    pub async fn heartbeat(
        &self,
        episode: Uuid,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET lease_expires_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(episode)
        .bind(owner)
        .bind(lease.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Stores a finished episode (outcome, screenshots, steps, verdicts) atomically.
    /// Returns false, and stores nothing, when `owner` no longer holds the lease.
    pub async fn finish_episode(
        &self,
        owner: &str,
        rec: &EpisodeRecord,
    ) -> Result<bool, StoreError> {
        // Postgres refuses NUL in text; pages and models produce it.
        if super::sanitize::needs_cleaning(rec) {
            return self
                .write_finished(owner, &super::sanitize::cleaned(rec), &rec.blobs)
                .await;
        }
        self.write_finished(owner, rec, &rec.blobs).await
    }

    async fn write_finished(
        &self,
        owner: &str,
        rec: &EpisodeRecord,
        blobs: &[super::Blob],
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE episodes SET status = 'finished', end_reason = $3, success = $4, score = $5,
                final_answer = $6, final_url = $7, final_screenshot = $8, steps = $9, duration_ms = $10,
                finished_at = now(), finished_by = $2, lease_owner = NULL, lease_expires_at = NULL,
                instruction = $11, judge_calls = $12, judge_facts = $13, final_page = $14,
                score_of_verified = $15, judge_exhaustive_calls = $16, screen = $17, policy = $18,
                visited_urls = $19
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(rec.id)
        .bind(owner)
        .bind(rec.end_reason.as_str())
        .bind(rec.success)
        .bind(rec.credit.score())
        .bind(&rec.final_answer)
        .bind(&rec.final_url)
        .bind(&rec.final_screenshot)
        .bind(i32::try_from(rec.steps.len()).unwrap_or(i32::MAX))
        .bind(ms(rec.duration))
        .bind(&rec.instruction)
        .bind(rec.judge_calls)
        .bind(rec.judge_facts)
        .bind(&rec.final_page)
        .bind(rec.credit.of_verified())
        .bind(rec.judge_exhaustive_calls)
        .bind(rec.screen.map(sqlx::types::Json))
        .bind(rec.policy.as_ref().map(sqlx::types::Json))
        .bind(&rec.visited_urls)
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
                    events, tabs, prompt, token_ids) ",
            );
            q.push_values(rec.steps.iter().enumerate(), |mut b, (i, s)| {
                b.push_bind(rec.id)
                    .push_bind(i32::try_from(i).unwrap_or(i32::MAX))
                    .push_bind(&s.url)
                    .push_bind(&s.title)
                    .push_bind(&s.screenshot)
                    .push_bind(&s.elements)
                    .push_bind(&s.action)
                    .push_bind(&s.thought)
                    .push_bind(&s.raw_output)
                    .push_bind(&s.action_error)
                    .push_bind(s.click.map(|c| c.0 as f32))
                    .push_bind(s.click.map(|c| c.1 as f32))
                    .push_bind(s.logprob)
                    .push_bind((!s.token_logprobs.is_empty()).then(|| s.token_logprobs.clone()))
                    .push_bind(s.observe_ms)
                    .push_bind(s.policy_ms)
                    .push_bind(s.act_ms)
                    .push_bind(&s.events)
                    .push_bind(&s.tabs)
                    .push_bind(&s.prompt)
                    .push_bind(ids_column(&s.token_ids));
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
        tx.commit().await?;
        Ok(true)
    }

    /// Gives an episode back after an infrastructure failure: to `pending` for a retry, or
    /// to `failed` when the runner gives up. Either way the reason is recorded and nothing
    /// is scored.
    pub async fn release_episode(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        give_up: bool,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = CASE WHEN $4 THEN 'failed' ELSE 'pending' END, last_error = $3,
                lease_owner = NULL, lease_expires_at = NULL,
                finished_at = CASE WHEN $4 THEN now() ELSE NULL END
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .bind(error)
        .bind(give_up)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Episodes matching a filter, in campaign order.
    pub async fn list_episodes(
        &self,
        f: &EpisodeFilter,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<EpisodeSummary>, i64), StoreError> {
        let mut q = QueryBuilder::new(SUMMARY);
        push_filter(&mut q, f);
        q.push(" ORDER BY e.task_id, e.rollout, e.id LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows = q.build_query_as().fetch_all(&self.pool).await?;
        let mut c =
            QueryBuilder::new("SELECT count(*) FROM episodes e JOIN tasks t ON t.id = e.task_id");
        push_filter(&mut c, f);
        let (total,): (i64,) = c.build_query_as().fetch_one(&self.pool).await?;
        Ok((rows, total))
    }

    /// The next `limit` episodes matching a filter after `after`, in campaign order. Pages
    /// by key rather than offset, so that reading a campaign while it runs neither skips
    /// nor repeats an episode as others finish.
    pub async fn episodes_after(
        &self,
        f: &EpisodeFilter,
        after: Option<&EpisodeKey>,
        limit: i64,
    ) -> Result<Vec<EpisodeKey>, StoreError> {
        let mut q = QueryBuilder::new(
            "SELECT e.task_id, e.rollout, e.id FROM episodes e JOIN tasks t ON t.id = e.task_id",
        );
        push_filter(&mut q, f);
        if let Some(k) = after {
            q.push(" AND (e.task_id, e.rollout, e.id) > (")
                .push_bind(k.task_id.clone())
                .push(", ")
                .push_bind(k.rollout)
                .push(", ")
                .push_bind(k.id)
                .push(")");
        }
        q.push(" ORDER BY e.task_id, e.rollout, e.id LIMIT ")
            .push_bind(limit);
        Ok(q.build_query_as().fetch_all(&self.pool).await?)
    }

    /// An episode with its steps and verdicts.
    pub async fn get_episode(&self, id: Uuid) -> Result<Option<EpisodeDetail>, StoreError> {
        let Some(summary) =
            sqlx::query_as::<_, EpisodeSummary>(&format!("{SUMMARY} WHERE e.id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await?
        else {
            return Ok(None);
        };
        type Head = (
            String,
            Option<String>,
            Option<String>,
            Option<sqlx::types::Json<Screen>>,
            Option<serde_json::Value>,
        );
        let (instruction, final_url, final_screenshot, screen, policy): Head = sqlx::query_as(
            "SELECT coalesce(e.instruction, t.instruction), e.final_url, e.final_screenshot,
                coalesce(e.screen, nullif(c.config->'screen', 'null'::jsonb)), e.policy
             FROM episodes e JOIN tasks t ON t.id = e.task_id JOIN campaigns c ON c.id = e.campaign_id
             WHERE e.id = $1",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await?;
        let steps = sqlx::query_as(
            "SELECT idx, url, title, screenshot, elements, events, tabs, action, thought, raw_output, action_error,
                click_x, click_y, logprob, token_logprobs, token_ids, prompt, observe_ms, policy_ms, act_ms
             FROM steps WHERE episode_id = $1 ORDER BY idx",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        // The fact's description comes from the rubric stored with the task.
        let verdicts = sqlx::query_as(
            "SELECT v.judge, v.group_id, v.fact_id, v.passed, v.evidence, v.reason,
                (SELECT f->>'description' FROM jsonb_array_elements(t.spec->'rubric'->'groups') g,
                    jsonb_array_elements(g->'facts') f WHERE f->>'id' = v.fact_id LIMIT 1) AS description
             FROM verdicts v JOIN episodes e ON e.id = v.episode_id JOIN tasks t ON t.id = e.task_id
             WHERE v.episode_id = $1 ORDER BY v.ord, v.judge",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await?;
        Ok(Some(EpisodeDetail {
            summary,
            instruction,
            final_url,
            final_screenshot,
            screen: screen.map(|s| s.0),
            // A card this version cannot read (another version wrote it) leaves the replay
            // without it rather than failing.
            policy: policy.and_then(|p| serde_json::from_value(p).ok()),
            steps,
            verdicts,
        }))
    }

    /// Ends every still-pending episode of a campaign as `failed` with a reason (a
    /// straggler cut-off: never started, so never scored). Returns how many.
    pub async fn fail_pending(&self, campaign: Uuid, reason: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE episodes SET status = 'failed', last_error = $2, finished_at = now()
             WHERE campaign_id = $1 AND status = 'pending'",
        )
        .bind(campaign)
        .bind(reason)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Step-time totals of a campaign's finished episodes: (steps, observe ms, policy ms,
    /// act ms).
    pub async fn campaign_step_times(
        &self,
        campaign: Uuid,
    ) -> Result<(i64, i64, i64, i64), StoreError> {
        Ok(sqlx::query_as(
            "SELECT count(*), coalesce(sum(s.observe_ms), 0)::bigint, coalesce(sum(s.policy_ms), 0)::bigint,
                coalesce(sum(s.act_ms), 0)::bigint
             FROM steps s JOIN episodes e ON e.id = s.episode_id WHERE e.campaign_id = $1",
        )
        .bind(campaign)
        .fetch_one(&self.pool)
        .await?)
    }

    /// When each finished episode of a campaign finished, in seconds after the first one
    /// started, sorted (throughput over a steady window, without start-up and tail).
    pub async fn finish_offsets(&self, campaign: Uuid) -> Result<Vec<f64>, StoreError> {
        let rows: Vec<(f64,)> = sqlx::query_as(
            "SELECT extract(epoch FROM e.finished_at - first.t)::float8
             FROM episodes e,
                  (SELECT min(started_at) AS t FROM episodes WHERE campaign_id = $1) first
             WHERE e.campaign_id = $1 AND e.status = 'finished'
             ORDER BY 1",
        )
        .bind(campaign)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    /// Who stored each finished episode of a campaign, and how many.
    pub async fn finished_by(&self, campaign: Uuid) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT coalesce(finished_by, ''), count(*) FROM episodes
             WHERE campaign_id = $1 AND status = 'finished' GROUP BY 1 ORDER BY 1",
        )
        .bind(campaign)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Counts rows for a campaign: (episodes, steps, distinct screenshots, verdicts).
    pub async fn campaign_row_counts(
        &self,
        campaign: Uuid,
    ) -> Result<(i64, i64, i64, i64), StoreError> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM episodes WHERE campaign_id = $1),
                    (SELECT count(*) FROM steps s JOIN episodes e ON e.id = s.episode_id WHERE e.campaign_id = $1),
                    (SELECT count(DISTINCT b.hash) FROM blobs b JOIN steps s ON s.screenshot = b.hash
                        JOIN episodes e ON e.id = s.episode_id WHERE e.campaign_id = $1),
                    (SELECT count(*) FROM verdicts v JOIN episodes e ON e.id = v.episode_id WHERE e.campaign_id = $1)",
        )
        .bind(campaign)
        .fetch_one(&self.pool)
        .await?)
    }

    /// A cached model-judge verdict for a fact of this trajectory.
    pub async fn cached_verdict(
        &self,
        episode: Uuid,
        trajectory: &str,
        fact: &str,
        judge: &str,
    ) -> Result<Option<(bool, String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT passed, evidence, reason FROM judge_cache WHERE episode_id = $1 AND trajectory = $2 AND fact_id = $3 AND judge = $4",
        )
        .bind(episode)
        .bind(trajectory)
        .bind(fact)
        .bind(judge)
        .fetch_optional(&self.pool)
        .await?)
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

    /// The stored final page, answer and visited URLs of a finished episode: what its
    /// judges read.
    pub async fn judged_material(
        &self,
        episode: Uuid,
    ) -> Result<Option<(serde_json::Value, Option<String>, Vec<String>)>, StoreError> {
        type Row = (
            Option<serde_json::Value>,
            Option<String>,
            Option<Vec<String>>,
        );
        let row: Option<Row> = sqlx::query_as(
            "SELECT final_page, final_answer, visited_urls FROM episodes
             WHERE id = $1 AND status = 'finished'",
        )
        .bind(episode)
        .fetch_optional(&self.pool)
        .await?;
        let Some((Some(page), answer, visited)) = row else {
            return Ok(None);
        };
        // What the live judge read; episodes stored before it was kept fall back to the
        // pages their observations showed.
        if let Some(visited) = visited {
            return Ok(Some((page, answer, visited)));
        }
        let urls: Vec<(String,)> =
            sqlx::query_as("SELECT url FROM steps WHERE episode_id = $1 ORDER BY idx")
                .bind(episode)
                .fetch_all(&self.pool)
                .await?;
        Ok(Some((
            page,
            answer,
            urls.into_iter().map(|(u,)| u).collect(),
        )))
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
