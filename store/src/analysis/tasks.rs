//! Per-task aggregates of a campaign (success rate, unbiased pass@k, means, the most
//! common end reason) and outcome breakdowns by a task attribute.

use serde::Serialize;
use sqlx::QueryBuilder;
use uuid::Uuid;

use super::filter::{Dimension, TaskScope, TaskSort};
use crate::state::EpisodeStatus;
use crate::{Store, StoreError};

/// One task across its rollouts in a campaign.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TaskStats {
    /// Task.
    pub task_id: String,
    /// Website.
    pub site: String,
    /// Difficulty.
    pub difficulty: String,
    /// Split.
    pub split: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Episodes planned.
    pub episodes: i64,
    /// Episodes finished (judged or not).
    pub finished: i64,
    /// Episodes judged (finished with a success label).
    pub judged: i64,
    /// Judged successful.
    pub successes: i64,
    /// `successes / judged`; null before any was judged.
    pub success_rate: Option<f64>,
    /// Unbiased pass@k over the judged rollouts (Chen et al., 2021): the chance that at
    /// least one of k rollouts drawn without replacement succeeds; null with fewer than k.
    pub pass_at_k: Option<f64>,
    /// Mean score over the scored episodes.
    pub mean_score: Option<f64>,
    /// Mean steps over the finished episodes.
    pub mean_steps: Option<f64>,
    /// The most common end reason (ties: the first alphabetically).
    pub end_reason: Option<String>,
    /// Scored episodes (for [`breakdown`], which adds tasks up; not in the API).
    #[serde(skip)]
    pub scored: i64,
    /// Their scores' sum.
    #[serde(skip)]
    pub score_sum: Option<f64>,
    /// The finished episodes' steps in all.
    #[serde(skip)]
    pub steps_sum: Option<i64>,
}

/// Outcomes of the episodes whose task has one value of a [`Dimension`].
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BreakdownBucket {
    /// The value (a site, a difficulty, a split or a tag).
    pub key: String,
    /// Tasks.
    pub tasks: i64,
    /// Episodes.
    pub episodes: i64,
    /// Judged episodes.
    pub judged: i64,
    /// Successful ones.
    pub successes: i64,
    /// `successes / judged`.
    pub success_rate: Option<f64>,
    /// Mean score.
    pub mean_score: Option<f64>,
    /// Mean steps over the finished episodes.
    pub mean_steps: Option<f64>,
}

impl Store {
    /// Each task of a campaign in `scope` across its rollouts, with pass@`k`.
    pub async fn campaign_task_stats(
        &self,
        campaign: Uuid,
        scope: &TaskScope,
        k: i64,
        sort: TaskSort,
        descending: bool,
    ) -> Result<Vec<TaskStats>, StoreError> {
        // Aggregated by task and end reason first, then by task: every aggregate hashes,
        // where `mode()` (an ordered-set aggregate) sorted the campaign's episodes by five
        // columns (80 ms of 400 for the largest campaign at 100,000 episodes).
        let mut q = QueryBuilder::new(
            "WITH g AS (
               SELECT e.task_id, e.end_reason, count(*) AS n,
                 count(*) FILTER (WHERE e.status = ",
        );
        q.push_bind(EpisodeStatus::Finished)
            .push(
                ") AS finished,
                 count(*) FILTER (WHERE e.success IS NOT NULL) AS judged,
                 count(*) FILTER (WHERE e.success) AS successes,
                 count(e.score) AS scored, sum(e.score::numeric) AS score_sum,
                 sum(e.steps) FILTER (WHERE e.status = ",
            )
            .push_bind(EpisodeStatus::Finished)
            .push(
                ") AS steps_sum
               FROM episodes e JOIN tasks t ON t.id = e.task_id
               WHERE e.campaign_id = ",
            )
            .push_bind(campaign);
        scope.push(&mut q);
        q.push(
            " GROUP BY e.task_id, e.end_reason),
             per AS (
               SELECT g.task_id, t.site, t.difficulty, t.split, t.tags,
                 sum(g.n)::int8 AS episodes, sum(g.finished)::int8 AS finished,
                 sum(g.judged)::int8 AS judged, sum(g.successes)::int8 AS successes,
                 (sum(g.score_sum) / nullif(sum(g.scored), 0))::float8 AS mean_score,
                 (sum(g.steps_sum)::numeric / nullif(sum(g.finished), 0))::float8 AS mean_steps,
                 (array_agg(g.end_reason ORDER BY g.n DESC, g.end_reason)
                   FILTER (WHERE g.end_reason IS NOT NULL))[1] AS end_reason,
                 sum(g.scored)::int8 AS scored, sum(g.score_sum)::float8 AS score_sum,
                 sum(g.steps_sum)::int8 AS steps_sum
               FROM g JOIN tasks t ON t.id = g.task_id GROUP BY g.task_id, t.id)
             SELECT per.*, successes::float8 / nullif(judged, 0) AS success_rate,
               CASE WHEN judged < ",
        )
        .push_bind(k)
        .push(" THEN NULL WHEN judged - successes < ")
        .push_bind(k)
        // 1 - C(n-c, k) / C(n, k) as a product, which never overflows.
        .push(" THEN 1.0::float8 ELSE 1.0 - coalesce((SELECT exp(sum(ln(1.0 - ")
        .push_bind(k as f64)
        .push(
            " / i))) FROM generate_series(judged - successes + 1, judged) AS i), 1.0)
               END::float8 AS pass_at_k
             FROM per ORDER BY ",
        );
        q.push(sort.column())
            .push(if descending {
                " DESC NULLS LAST"
            } else {
                " ASC NULLS LAST"
            })
            .push(", task_id");
        Ok(q.build_query_as().fetch_all(&self.pool).await?)
    }

    /// A campaign's outcomes in `scope` by the value of one task attribute.
    pub async fn campaign_breakdown_by(
        &self,
        campaign: Uuid,
        scope: &TaskScope,
        by: Dimension,
    ) -> Result<Vec<BreakdownBucket>, StoreError> {
        let (key, from) = match by {
            Dimension::Site => ("t.site", ""),
            Dimension::Difficulty => ("t.difficulty", ""),
            Dimension::Split => ("t.split", ""),
            Dimension::Tag => ("tag.key", " CROSS JOIN LATERAL unnest(t.tags) AS tag(key)"),
        };
        // Per task first (one hashed pass over the campaign's episodes), then by the
        // attribute over at most one row per task: `count(DISTINCT task)` over the
        // episodes sorted them, on disk for tags (260 ms at 100,000 episodes).
        let mut q = QueryBuilder::new(
            "WITH per AS (
               SELECT e.task_id, count(*) AS episodes,
                 count(*) FILTER (WHERE e.success IS NOT NULL) AS judged,
                 count(*) FILTER (WHERE e.success) AS successes,
                 count(e.score) AS scored, sum(e.score::numeric) AS score_sum,
                 count(*) FILTER (WHERE e.status = ",
        );
        q.push_bind(EpisodeStatus::Finished)
            .push(
                ") AS finished,
                 sum(e.steps) FILTER (WHERE e.status = ",
            )
            .push_bind(EpisodeStatus::Finished)
            .push(
                ") AS steps_sum
               FROM episodes e JOIN tasks t ON t.id = e.task_id
               WHERE e.campaign_id = ",
            )
            .push_bind(campaign);
        scope.push(&mut q);
        q.push(format!(
            " GROUP BY e.task_id)
             SELECT {key} AS key, count(*) AS tasks, sum(p.episodes)::int8 AS episodes,
               sum(p.judged)::int8 AS judged, sum(p.successes)::int8 AS successes,
               sum(p.successes)::float8 / nullif(sum(p.judged), 0) AS success_rate,
               (sum(p.score_sum) / nullif(sum(p.scored), 0))::float8 AS mean_score,
               (sum(p.steps_sum)::numeric / nullif(sum(p.finished), 0))::float8 AS mean_steps
             FROM per p JOIN tasks t ON t.id = p.task_id{from}"
        ));
        q.push(" GROUP BY 1 ORDER BY ");
        q.push(if by == Dimension::Difficulty {
            "array_position(ARRAY['easy','medium','hard'], min(t.difficulty))"
        } else {
            "1"
        });
        Ok(q.build_query_as().fetch_all(&self.pool).await?)
    }
}

/// A campaign's outcomes by the value of one task attribute, added up from its per-task
/// rows ([`Store::campaign_task_stats`] in the same scope): one query for the analysis
/// page instead of one per dimension. Difficulties in order (easy, medium, hard, then
/// others), other keys alphabetically.
pub fn breakdown(tasks: &[TaskStats], by: Dimension) -> Vec<BreakdownBucket> {
    #[derive(Default)]
    struct Sum {
        tasks: i64,
        episodes: i64,
        judged: i64,
        successes: i64,
        scored: i64,
        score_sum: f64,
        finished: i64,
        steps_sum: i64,
    }
    let mut sums: std::collections::BTreeMap<&str, Sum> = std::collections::BTreeMap::new();
    for t in tasks {
        let keys: Vec<&str> = match by {
            Dimension::Site => vec![t.site.as_str()],
            Dimension::Difficulty => vec![t.difficulty.as_str()],
            Dimension::Split => vec![t.split.as_str()],
            Dimension::Tag => t.tags.iter().map(String::as_str).collect(),
        };
        for k in keys {
            let s = sums.entry(k).or_default();
            s.tasks += 1;
            s.episodes += t.episodes;
            s.judged += t.judged;
            s.successes += t.successes;
            s.scored += t.scored;
            s.score_sum += t.score_sum.unwrap_or(0.0);
            s.finished += t.finished;
            s.steps_sum += t.steps_sum.unwrap_or(0);
        }
    }
    let ratio = |a: f64, b: i64| (b > 0).then(|| a / b as f64);
    let mut out: Vec<BreakdownBucket> = sums
        .into_iter()
        .map(|(key, s)| BreakdownBucket {
            key: key.to_string(),
            tasks: s.tasks,
            episodes: s.episodes,
            judged: s.judged,
            successes: s.successes,
            success_rate: ratio(s.successes as f64, s.judged),
            mean_score: ratio(s.score_sum, s.scored),
            mean_steps: ratio(s.steps_sum as f64, s.finished),
        })
        .collect();
    if by == Dimension::Difficulty {
        let rank = |k: &str| {
            ["easy", "medium", "hard"]
                .iter()
                .position(|d| *d == k)
                .unwrap_or(3)
        };
        out.sort_by(|a, b| rank(&a.key).cmp(&rank(&b.key)).then(a.key.cmp(&b.key)));
    }
    out
}
