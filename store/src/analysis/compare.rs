//! Two campaigns task by task: the tasks one solves and the other does not come first.

use serde::Serialize;
use uuid::Uuid;

use crate::{Store, StoreError};

/// One task under two campaigns (`a_*` and `b_*`; zeros where a campaign lacks the task).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct CompareRow {
    /// Task.
    pub task_id: String,
    /// Website.
    pub site: String,
    /// Difficulty.
    pub difficulty: String,
    /// A's judged episodes of the task.
    pub a_judged: i64,
    /// A's successes.
    pub a_successes: i64,
    /// A's success rate.
    pub a_success_rate: Option<f64>,
    /// B's judged episodes of the task.
    pub b_judged: i64,
    /// B's successes.
    pub b_successes: i64,
    /// B's success rate.
    pub b_success_rate: Option<f64>,
    /// Exactly one campaign solved the task (at least one successful rollout).
    pub differs: bool,
    /// A's first rollout of the task (to open beside B's).
    pub a_episode: Option<Uuid>,
    /// B's first rollout of the task.
    pub b_episode: Option<Uuid>,
}

/// How the tasks split between two campaigns.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct CompareCounts {
    /// Tasks either campaign ran.
    pub tasks: i64,
    /// Solved by A only.
    pub only_a: i64,
    /// Solved by B only.
    pub only_b: i64,
    /// Solved by both.
    pub both: i64,
    /// Solved by neither.
    pub neither: i64,
}

const JOINED: &str = "WITH per AS (
    SELECT campaign_id, task_id,
      count(*) FILTER (WHERE success IS NOT NULL) AS judged,
      count(*) FILTER (WHERE success) AS successes,
      (array_agg(id ORDER BY rollout, id))[1] AS first
    FROM episodes WHERE campaign_id IN ($1, $2) GROUP BY campaign_id, task_id),
  a AS (SELECT * FROM per WHERE campaign_id = $1),
  b AS (SELECT * FROM per WHERE campaign_id = $2),
  j AS (
    SELECT task_id, coalesce(a.judged, 0) AS a_judged, coalesce(a.successes, 0) AS a_successes,
      coalesce(b.judged, 0) AS b_judged, coalesce(b.successes, 0) AS b_successes,
      a.first AS a_episode, b.first AS b_episode
    FROM a FULL JOIN b USING (task_id))";

impl Store {
    /// Two campaigns task by task: first the tasks exactly one of them solved, then by how
    /// far their success rates differ, then by task; a page of them and the counts.
    pub async fn compare_campaigns(
        &self,
        a: Uuid,
        b: Uuid,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<CompareRow>, CompareCounts), StoreError> {
        let rows = sqlx::query_as(&format!(
            "{JOINED}
             SELECT j.task_id, t.site, t.difficulty, a_judged, a_successes,
               a_successes::float8 / nullif(a_judged, 0) AS a_success_rate,
               b_judged, b_successes, b_successes::float8 / nullif(b_judged, 0) AS b_success_rate,
               (a_successes > 0) <> (b_successes > 0) AS differs, a_episode, b_episode
             FROM j JOIN tasks t ON t.id = j.task_id
             ORDER BY differs DESC,
               abs(coalesce(a_successes::float8 / nullif(a_judged, 0), 0)
                 - coalesce(b_successes::float8 / nullif(b_judged, 0), 0)) DESC,
               j.task_id
             LIMIT $3 OFFSET $4"
        ))
        .bind(a)
        .bind(b)
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let counts = sqlx::query_as(&format!(
            "{JOINED}
             SELECT count(*) AS tasks,
               count(*) FILTER (WHERE a_successes > 0 AND b_successes = 0) AS only_a,
               count(*) FILTER (WHERE a_successes = 0 AND b_successes > 0) AS only_b,
               count(*) FILTER (WHERE a_successes > 0 AND b_successes > 0) AS both,
               count(*) FILTER (WHERE a_successes = 0 AND b_successes = 0) AS neither
             FROM j"
        ))
        .bind(a)
        .bind(b)
        .fetch_one(&self.pool)
        .await?;
        Ok((rows, counts))
    }
}
