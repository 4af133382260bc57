//! Finished episodes as a dataset: what a trainer outside surfgym reads (one JSON object
//! per episode, the replay's schema: steps with actions, the prompts model policies were
//! given, their raw outputs and per-token log-probabilities, verdicts, the task's split).
//! The CLI writes it as JSON Lines, the API streams it.

use futures::Stream;
use uuid::Uuid;

use crate::{EpisodeDetail, EpisodeFilter, EpisodeKey, Store, StoreError};

/// Episodes read from the database per query.
const PAGE: i64 = 100;

/// Which finished episodes to export.
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    /// Only this campaign's.
    pub campaign: Option<Uuid>,
    /// Only tasks of this split (`train` or `test`).
    pub split: Option<String>,
    /// Only successful (or only unsuccessful) ones.
    pub success: Option<bool>,
}

impl ExportFilter {
    /// Only finished and judged episodes: pending and running ones have nothing final to
    /// learn from, failed ones ended on infrastructure, not on the agent, and those whose
    /// rubric could not be evaluated (`judge_error`) have no outcome to learn from.
    fn episodes(&self) -> EpisodeFilter {
        EpisodeFilter {
            campaign: self.campaign,
            status: Some(crate::StatusFilter::Judged),
            success: self.success,
            split: self.split.clone(),
            task: None,
        }
    }
}

/// How many episodes `filter` exports now.
pub async fn count(store: &Store, filter: &ExportFilter) -> Result<i64, StoreError> {
    Ok(store.list_episodes(&filter.episodes(), 0, 0).await?.1)
}

/// The finished episodes matching `filter`, whole, in campaign order (task, rollout). Read
/// a page of keys at a time, so a campaign that is still running exports each episode
/// finished so far exactly once.
pub fn episodes(
    store: Store,
    filter: ExportFilter,
) -> impl Stream<Item = Result<EpisodeDetail, StoreError>> {
    episodes_in_pages(store, filter, PAGE)
}

/// [`episodes`], reading `page` keys per query.
pub fn episodes_in_pages(
    store: Store,
    filter: ExportFilter,
    page: i64,
) -> impl Stream<Item = Result<EpisodeDetail, StoreError>> {
    let filter = filter.episodes();
    let state = (store, filter, None::<EpisodeKey>, Vec::<EpisodeKey>::new());
    futures::stream::try_unfold(state, move |(store, filter, last, mut queued)| async move {
        if queued.is_empty() {
            queued = store.episodes_after(&filter, last.as_ref(), page).await?;
            queued.reverse();
        }
        let Some(key) = queued.pop() else {
            return Ok(None);
        };
        // An episode is never deleted once finished; a missing one means a hand-edited
        // database, which the caller should hear about rather than get a short dataset.
        let detail = store.get_episode(key.id).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("episode {} vanished during the export", key.id))
        })?;
        Ok(Some((detail, (store, filter, Some(key), queued))))
    })
}
