//! Reading episodes back: lists, key-ordered pages for the export, the replay of one
//! episode, and the sums the campaign reports and judges read.

use chrono::{DateTime, Utc};
use serde::Serialize;
use spaces::Screen;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::StepCore;
use crate::state::{EpisodeStatus, StatusFilter};
use crate::{PolicyCard, Store, StoreError};

/// Which episodes to list.
#[derive(Debug, Clone, Default)]
pub struct EpisodeFilter {
    /// Campaign.
    pub campaign: Option<Uuid>,
    /// Task.
    pub task: Option<String>,
    /// Status, or finished episodes whose rubric could (not) be evaluated.
    pub status: Option<StatusFilter>,
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
    /// Where it stands.
    pub status: EpisodeStatus,
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
    /// The rubric could not be evaluated on this finished episode (its error, not the
    /// agent's): it has no success and no score.
    pub judge_error: Option<String>,
    /// Wall time, ms.
    pub duration_ms: Option<i32>,
    /// Of which waiting for a session slot on its start domain (politeness), ms; null
    /// where the pool capped nothing.
    pub politeness_ms: Option<i32>,
    /// Requests its replay could not answer from its recording; null where it was not a
    /// replay.
    pub unmatched_requests: Option<i32>,
    /// Started.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// One step in a replay: its index, the fields every step stores (flattened: the wire
/// shape is one object), and the click and tokens as their columns hold them.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct StepView {
    /// Index from 0.
    pub idx: i32,
    /// What was seen, what was done, how long it took.
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub core: StepCore,
    /// Click x.
    pub click_x: Option<f32>,
    /// Click y.
    pub click_y: Option<f32>,
    /// Log-probability of each generated token of `raw_output`, when the policy reported
    /// them (what a trainer needs for importance ratios).
    pub token_logprobs: Option<Vec<f32>>,
    /// The id of each generated token of `raw_output` in the model's vocabulary, paired
    /// with `token_logprobs`, when the policy reported them.
    pub token_ids: Option<Vec<i32>>,
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
    match f.status {
        None => {}
        // Two views of `finished`: whether the rubric could be evaluated.
        Some(StatusFilter::Judged) => {
            q.push(" AND e.status = ")
                .push_bind(EpisodeStatus::Finished)
                .push(" AND e.judge_error IS NULL");
        }
        Some(StatusFilter::JudgeError) => {
            q.push(" AND e.status = ")
                .push_bind(EpisodeStatus::Finished)
                .push(" AND e.judge_error IS NOT NULL");
        }
        Some(StatusFilter::Is(s)) => {
            q.push(" AND e.status = ").push_bind(s);
        }
    }
    if let Some(s) = f.success {
        q.push(" AND e.success = ").push_bind(s);
    }
    if let Some(s) = &f.split {
        // A semi-join, so that the filter needs no join with `tasks` around it.
        q.push(" AND EXISTS (SELECT 1 FROM tasks ts WHERE ts.id = e.task_id AND ts.split = ")
            .push_bind(s.clone())
            .push(")");
    }
}

/// `count(*)` of the episodes a filter matches, from the per-campaign counters when the
/// filter allows (campaign and status only), else over the episodes.
fn push_count(q: &mut QueryBuilder<'_, sqlx::Postgres>, f: &EpisodeFilter) {
    // `campaign_stats` has a column per episode status (named as the status): a filter on
    // at most a campaign and one status is counted from it rather than by reading every
    // matching episode.
    let every = EpisodeStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    let status = match f.status {
        None => Some(every),
        Some(StatusFilter::Is(s)) => Some(s.as_str().to_string()),
        Some(_) => None,
    };
    match status {
        Some(column) if f.task.is_none() && f.success.is_none() && f.split.is_none() => {
            q.push(format!(
                "SELECT coalesce(sum({column}), 0)::bigint FROM campaign_stats"
            ));
            if let Some(c) = f.campaign {
                q.push(" WHERE campaign_id = ").push_bind(c);
            }
        }
        _ => {
            q.push("SELECT count(*) FROM episodes e");
            push_filter(q, f);
        }
    }
}

const SUMMARY: &str = "SELECT e.id, e.campaign_id, e.task_id, t.site, t.split, e.rollout, e.seed, e.status, e.end_reason,
        e.success, e.score, e.score_of_verified, e.final_answer, e.steps, e.attempts, e.last_error, e.judge_error, e.duration_ms, e.politeness_ms, e.unmatched_requests, e.started_at, e.finished_at
    FROM episodes e JOIN tasks t ON t.id = e.task_id";

impl Store {
    /// Episodes matching a filter, in campaign order.
    pub async fn list_episodes(
        &self,
        f: &EpisodeFilter,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<EpisodeSummary>, i64), StoreError> {
        // The page's keys first, from an index in list order (deep pages skip index
        // entries, not rows), then its rows.
        let mut q =
            QueryBuilder::new("WITH page AS (SELECT e.id, e.task_id, e.rollout FROM episodes e");
        push_filter(&mut q, f);
        q.push(" ORDER BY e.task_id, e.rollout, e.id LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset)
            .push(") ")
            .push(SUMMARY)
            .push(" JOIN page p ON p.id = e.id ORDER BY p.task_id, p.rollout, p.id");
        let rows = q.build_query_as().fetch_all(&self.pool).await?;
        let mut c = QueryBuilder::new("");
        push_count(&mut c, f);
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
        let mut q = QueryBuilder::new("SELECT e.task_id, e.rollout, e.id FROM episodes e");
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
                click_x, click_y, logprob, token_logprobs, token_ids, prompt, observe_ms, policy_ms, act_ms,
                ax_tree
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
             WHERE e.campaign_id = $1 AND e.status = $2
             ORDER BY 1",
        )
        .bind(campaign)
        .bind(EpisodeStatus::Finished)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    /// Who stored each finished episode of a campaign, and how many.
    pub async fn finished_by(&self, campaign: Uuid) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT coalesce(finished_by, ''), count(*) FROM episodes
             WHERE campaign_id = $1 AND status = $2 GROUP BY 1 ORDER BY 1",
        )
        .bind(campaign)
        .bind(EpisodeStatus::Finished)
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
             WHERE id = $1 AND status = $2",
        )
        .bind(episode)
        .bind(EpisodeStatus::Finished)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The replay's step is one flat object on the wire, whatever its Rust shape.
    #[test]
    fn a_step_view_is_one_flat_object() {
        let view = StepView {
            idx: 0,
            core: StepCore {
                url: "http://x/".into(),
                title: "t".into(),
                screenshot: None,
                elements: serde_json::json!([]),
                events: serde_json::json!([]),
                tabs: serde_json::json!([]),
                ax_tree: Some("[1] button \"Go\"".into()),
                action: "stop()".into(),
                thought: None,
                raw_output: None,
                action_error: None,
                logprob: None,
                prompt: None,
                observe_ms: 1,
                policy_ms: 2,
                act_ms: 3,
            },
            click_x: Some(1.0),
            click_y: None,
            token_logprobs: None,
            token_ids: Some(vec![7]),
        };
        let v = serde_json::to_value(&view).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = [
            "idx",
            "url",
            "title",
            "screenshot",
            "elements",
            "events",
            "tabs",
            "ax_tree",
            "action",
            "thought",
            "raw_output",
            "action_error",
            "click_x",
            "click_y",
            "logprob",
            "token_logprobs",
            "token_ids",
            "prompt",
            "observe_ms",
            "policy_ms",
            "act_ms",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(v["url"], "http://x/");
        assert_eq!(v["act_ms"], 3);
        assert_eq!(v["click_x"], 1.0);
        assert_eq!(v["token_ids"], serde_json::json!([7]));
    }
}
