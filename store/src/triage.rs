//! Failure triage: what went wrong across a campaign's episodes (or every campaign's),
//! grouped in SQL so that the answer costs a few aggregate queries however many episodes
//! there are: end reasons, infrastructure failures, pages that turned the agent away by
//! site, rubric errors, the page events each site raised, and the rubric facts that fail
//! most.

use serde::Serialize;
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

use super::{Store, StoreError};
use crate::state::EpisodeStatus;

/// Example episodes kept per group (failures first, newest first).
pub const TRIAGE_EXAMPLES: i64 = 3;
/// Groups kept per list (largest first); `Triage` says when a list was cut.
pub const TRIAGE_GROUPS: i64 = 50;

/// Episodes by status, over the triage's scope.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct TriageTotals {
    /// Every episode.
    pub episodes: i64,
    /// Ran to an end (judged, or with a rubric error).
    pub finished: i64,
    /// Judged successful.
    pub successes: i64,
    /// Gave up after infrastructure failures.
    pub failed: i64,
    /// Finished with a rubric the page could not evaluate.
    pub judge_errors: i64,
    /// Episodes with an infrastructure error recorded (given up, retried, or waiting for a
    /// retry).
    pub infra_errors: i64,
}

/// Finished episodes that ended the same way.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EndReasonGroup {
    /// `answered`, `stopped`, `max_steps`, `policy_error`, `timeout`, `env_done`.
    pub end_reason: String,
    /// Episodes.
    pub episodes: i64,
    /// Of which judged successful.
    pub successes: i64,
    /// Of which judged unsuccessful.
    pub failures: i64,
    /// Of which not scored (rubric error).
    pub judge_errors: i64,
    /// A few of them, unsuccessful ones first.
    pub examples: Vec<Uuid>,
}

/// Episodes that recorded the same kind of error.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ErrorGroup {
    /// What the errors share: for infrastructure errors the text before the first `:`
    /// (the failing part, e.g. `browser_pool`), for rubric errors the message.
    pub kind: String,
    /// Episodes.
    pub episodes: i64,
    /// Of which given up (`failed`).
    pub gave_up: i64,
    /// Of which finished after all (retried successfully, or a rubric error).
    pub finished: i64,
    /// One whole message of the group (the newest).
    pub sample: String,
    /// A few of the episodes, newest first.
    pub examples: Vec<Uuid>,
}

/// The page events of one kind that one site's pages raised.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct PageEventGroup {
    /// The task's website.
    pub site: String,
    /// `dialog`, `blocked`, `download`, `script_stopped`, `navigation_stopped`,
    /// `tab_opened`, `tab_closed`.
    pub kind: String,
    /// Events (a repeated dialog counts as many times as it was shown).
    pub events: i64,
    /// Steps that reported one.
    pub steps: i64,
    /// Episodes that saw one.
    pub episodes: i64,
    /// What one of them was about (a dialog's message, a URL, what a script was doing).
    pub sample: Option<String>,
    /// A few of the episodes.
    pub examples: Vec<Uuid>,
}

/// One rubric fact of one task, over the judge verdicts given on it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct FactGroup {
    /// Task.
    pub task_id: String,
    /// Fact group.
    pub group_id: String,
    /// Fact.
    pub fact_id: String,
    /// The fact in words, from the task's rubric.
    pub description: Option<String>,
    /// Verdicts that found it false.
    pub failed: i64,
    /// Verdicts that found it true.
    pub passed: i64,
    /// Facts left unchecked (binary judging stopped early).
    pub unchecked: i64,
    /// A few episodes where it failed, newest first.
    pub examples: Vec<Uuid>,
}

/// Failure triage over one campaign or all of them.
#[derive(Debug, Clone, Serialize)]
pub struct Triage {
    /// The campaign, or `None` for every campaign.
    pub campaign: Option<Uuid>,
    /// Episodes by status.
    pub totals: TriageTotals,
    /// Finished episodes by end reason, most common first.
    pub end_reasons: Vec<EndReasonGroup>,
    /// Infrastructure errors by kind, most common first.
    pub infra_failures: Vec<ErrorGroup>,
    /// Episodes a page turned away (their last attempt's error), by reason and site
    /// (`captcha at https://shop.example`), most common first.
    pub blocked: Vec<ErrorGroup>,
    /// Rubric errors by message, most common first.
    pub judge_errors: Vec<ErrorGroup>,
    /// Page events by site and kind, most frequent first.
    pub page_events: Vec<PageEventGroup>,
    /// Facts with at least one failing verdict, most failed first.
    pub facts: Vec<FactGroup>,
    /// Groups kept per list; a list this long may have been cut.
    pub group_limit: i64,
}

/// `AND e.campaign_id = $n` when scoped to one campaign.
fn scope(q: &mut QueryBuilder<'_, Postgres>, campaign: Option<Uuid>) {
    if let Some(c) = campaign {
        q.push(" AND e.campaign_id = ").push_bind(c);
    }
}

impl Store {
    /// Failure triage over `campaign`'s episodes, or every episode when `None`.
    pub async fn triage(&self, campaign: Option<Uuid>) -> Result<Triage, StoreError> {
        let mut q = QueryBuilder::new(
            "SELECT count(*) AS episodes,
                count(*) FILTER (WHERE e.status = ",
        );
        q.push_bind(EpisodeStatus::Finished)
            .push(
                ") AS finished,
                count(*) FILTER (WHERE e.success) AS successes,
                count(*) FILTER (WHERE e.status = ",
            )
            .push_bind(EpisodeStatus::Failed)
            .push(
                ") AS failed,
                count(*) FILTER (WHERE e.judge_error IS NOT NULL) AS judge_errors,
                count(*) FILTER (WHERE e.last_error IS NOT NULL) AS infra_errors
             FROM episodes e WHERE true",
            );
        scope(&mut q, campaign);
        let totals = q.build_query_as().fetch_one(&self.pool).await?;

        let mut q = QueryBuilder::new(
            "SELECT e.end_reason, count(*) AS episodes,
                count(*) FILTER (WHERE e.success) AS successes,
                count(*) FILTER (WHERE e.success = false) AS failures,
                count(*) FILTER (WHERE e.judge_error IS NOT NULL) AS judge_errors,
                (array_agg(e.id ORDER BY e.success IS TRUE, e.finished_at DESC NULLS LAST))[1:",
        );
        q.push(TRIAGE_EXAMPLES.to_string())
            .push(
                "] AS examples
             FROM episodes e WHERE e.status = ",
            )
            .push_bind(EpisodeStatus::Finished)
            .push(" AND e.end_reason IS NOT NULL");
        scope(&mut q, campaign);
        q.push(" GROUP BY e.end_reason ORDER BY count(*) DESC, e.end_reason LIMIT ")
            .push_bind(TRIAGE_GROUPS);
        let end_reasons = q.build_query_as().fetch_all(&self.pool).await?;

        let infra_failures = self
            .error_groups(
                campaign,
                "left(split_part(e.last_error, ':', 1), 120)",
                "e.last_error",
            )
            .await?;
        // The runner stores a block as `blocked: <reason> at <url> (<evidence>)`.
        let blocked = self
            .error_groups(
                campaign,
                "substring(e.last_error from '^blocked: ([a-z_]+ at [a-z]+://[^/ ]+)')",
                "CASE WHEN e.last_error LIKE 'blocked: % at %' THEN e.last_error END",
            )
            .await?;
        let judge_errors = self
            .error_groups(campaign, "left(e.judge_error, 200)", "e.judge_error")
            .await?;

        // From `campaign_page_events` (one row per step and kind, kept by the step
        // trigger of migration 0021), not by unnesting every step of the campaign.
        let mut q = QueryBuilder::new(
            "SELECT p.site, p.kind, sum(p.events)::int8 AS events, count(*) AS steps,
                count(DISTINCT p.episode_id) AS episodes,
                (array_agg(p.sample ORDER BY p.finished_at DESC NULLS LAST))[1] AS sample,
                (array_agg(DISTINCT p.episode_id))[1:",
        );
        q.push(TRIAGE_EXAMPLES.to_string())
            .push("] AS examples FROM campaign_page_events p WHERE true");
        if let Some(c) = campaign {
            q.push(" AND p.campaign_id = ").push_bind(c);
        }
        q.push(" GROUP BY p.site, p.kind ORDER BY 3 DESC, 1, 2 LIMIT ")
            .push_bind(TRIAGE_GROUPS);
        let page_events = q.build_query_as().fetch_all(&self.pool).await?;

        // The counts from `campaign_fact_counts` (kept by triggers on verdicts, migration
        // 0021); examples and descriptions looked up for the groups shown only.
        let mut q = QueryBuilder::new(
            "WITH f AS (
               SELECT task_id, group_id, fact_id, sum(failed)::int8 AS failed,
                 sum(passed)::int8 AS passed, sum(unchecked)::int8 AS unchecked
               FROM campaign_fact_counts WHERE true",
        );
        if let Some(c) = campaign {
            q.push(" AND campaign_id = ").push_bind(c);
        }
        q.push(
            " GROUP BY 1, 2, 3 HAVING sum(failed) > 0 ORDER BY 4 DESC, 1, 3 LIMIT ",
        )
        .push_bind(TRIAGE_GROUPS)
        .push(
            ")
             SELECT f.task_id, f.group_id, f.fact_id,
                (SELECT g->>'description' FROM tasks t, jsonb_array_elements(t.spec->'rubric'->'groups') gr,
                    jsonb_array_elements(gr->'facts') g
                 WHERE t.id = f.task_id AND g->>'id' = f.fact_id LIMIT 1) AS description,
                f.failed, f.passed, f.unchecked,
                ARRAY(SELECT DISTINCT v.episode_id FROM episodes e
                        JOIN verdicts v ON v.episode_id = e.id
                      WHERE e.task_id = f.task_id AND v.group_id = f.group_id
                        AND v.fact_id = f.fact_id AND v.passed = false",
        );
        scope(&mut q, campaign);
        q.push(" ORDER BY 1 LIMIT ")
            .push(TRIAGE_EXAMPLES.to_string())
            .push(") AS examples FROM f ORDER BY f.failed DESC, f.task_id, f.fact_id");
        let facts = q.build_query_as().fetch_all(&self.pool).await?;

        Ok(Triage {
            campaign,
            totals,
            end_reasons,
            infra_failures,
            blocked,
            judge_errors,
            page_events,
            facts,
            group_limit: TRIAGE_GROUPS,
        })
    }

    /// Episodes whose `column` is set, grouped by `key` (both SQL over `episodes e`).
    async fn error_groups(
        &self,
        campaign: Option<Uuid>,
        key: &str,
        column: &str,
    ) -> Result<Vec<ErrorGroup>, StoreError> {
        let mut q = QueryBuilder::new(format!(
            "SELECT {key} AS kind, count(*) AS episodes,
                count(*) FILTER (WHERE e.status = "
        ));
        q.push_bind(EpisodeStatus::Failed)
            .push(
                ") AS gave_up,
                count(*) FILTER (WHERE e.status = ",
            )
            .push_bind(EpisodeStatus::Finished)
            .push(format!(
                ") AS finished,
                (array_agg({column} ORDER BY e.finished_at DESC NULLS LAST))[1] AS sample,
                (array_agg(e.id ORDER BY e.finished_at DESC NULLS LAST))[1:{TRIAGE_EXAMPLES}] AS examples
             FROM episodes e WHERE {column} IS NOT NULL"
            ));
        scope(&mut q, campaign);
        q.push(" GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ")
            .push_bind(TRIAGE_GROUPS);
        Ok(q.build_query_as().fetch_all(&self.pool).await?)
    }
}
