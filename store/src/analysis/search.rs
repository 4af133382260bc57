//! A page of a campaign's episodes: searched, filtered and ordered by Postgres.

use sqlx::QueryBuilder;
use uuid::Uuid;

use super::filter::EpisodeSearch;
use crate::{EpisodeSummary, Store, StoreError};

const FROM: &str = " FROM episodes e JOIN tasks t ON t.id = e.task_id WHERE e.campaign_id = ";

impl Store {
    /// The episodes of a campaign that `search` matches, a page of them in its order, and
    /// how many match in all.
    pub async fn search_episodes(
        &self,
        campaign: Uuid,
        search: &EpisodeSearch,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<EpisodeSummary>, i64), StoreError> {
        let mut q = QueryBuilder::new(
            "SELECT e.id, e.campaign_id, e.task_id, t.site, t.split, e.rollout, e.seed, e.status,
               e.end_reason, e.success, e.score, e.score_of_verified, e.final_answer, e.steps,
               e.attempts, e.last_error, e.judge_error, e.duration_ms, e.politeness_ms, e.unmatched_requests, e.started_at,
               e.finished_at",
        );
        q.push(FROM).push_bind(campaign);
        search.push(&mut q);
        q.push(" ORDER BY ")
            .push(search.sort.column())
            .push(if search.descending {
                " DESC NULLS LAST"
            } else {
                " ASC NULLS LAST"
            })
            // A total order, so that pages neither repeat nor skip an episode.
            .push(", e.task_id, e.rollout, e.id LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows = q.build_query_as().fetch_all(&self.pool).await?;
        let mut c = QueryBuilder::new("SELECT count(*)");
        c.push(FROM).push_bind(campaign);
        search.push(&mut c);
        let (total,): (i64,) = c.build_query_as().fetch_one(&self.pool).await?;
        Ok((rows, total))
    }
}
