//! Reviewed episodes in Chromium: the random policy's episodes recorded as fixed action
//! lists for a person to label ([`record_random`]), and replayed for the labelled set
//! ([`replay_reviewed`]), refusing a replay that no longer visits what was reviewed.

use std::collections::BTreeMap;
use std::sync::Arc;

use browser_pool::BrowserPool;
use tasks::Task;
use tasks::reviewed::{Reviewed, ReviewedSpec, templated};

use super::{Point, replay};
use crate::runner::InfraError;
use policy::RandomPolicy;

/// Why a reviewed episode cannot be labelled.
#[derive(Debug, thiserror::Error)]
pub enum ReviewedError {
    /// The browser or the site failed.
    #[error(transparent)]
    Infra(#[from] InfraError),
    /// The replay is not the trajectory that was reviewed (a site changed under it).
    #[error(
        "{label}: the replay visited {got:?}, the reviewed episode {want:?}: the site changed since it was reviewed; record it again (`surfgym judge record-random`) and review it"
    )]
    Diverged {
        /// The episode.
        label: String,
        /// The pages the review saw.
        want: Vec<String>,
        /// The pages the replay saw.
        got: Vec<String>,
    },
}

/// Plays the reviewed episode's actions on its task and returns where they end, provided
/// they visit the pages the reviewer saw.
pub async fn replay_reviewed(
    pool: &BrowserPool,
    task: &Task,
    r: &Reviewed,
    bases: &BTreeMap<String, String>,
) -> Result<Point, ReviewedError> {
    let mut points = replay(pool, task, &r.actions, false, r.spec.seed).await?;
    let point = points.pop().expect("a replay returns at least one point");
    let want = r.spec.visited_at(bases);
    if point.visited != want {
        return Err(ReviewedError::Diverged {
            label: r.label(),
            want,
            got: point.visited,
        });
    }
    Ok(point)
}

/// A random policy's episode, ready for review.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The line to write, every label `null`.
    pub spec: ReviewedSpec,
    /// Where its replay ends: what the reviewer looks at.
    pub end: Point,
}

/// Plays the random policy on `task` with `seed` through the runner, then replays its
/// actions the way the labelled set will, and records that replay's pages.
pub async fn record_random(
    pool: &BrowserPool,
    task: Arc<Task>,
    seed: u64,
    bases: &BTreeMap<String, String>,
) -> Result<Recorded, InfraError> {
    let finished = super::play(pool, &task, Arc::new(RandomPolicy), seed).await?;
    let mut spec = ReviewedSpec::unreviewed(&task, "random", seed);
    let mut actions = Vec::new();
    for s in &finished.steps {
        // The random policy writes only actions that parse; anything else is not replayable.
        if let Ok(a) = spaces::parse_action(&s.core.action) {
            actions.push(a);
            spec.actions.push(s.core.action.clone());
            spec.steps.push(s.core.thought.clone().unwrap_or_default());
        }
    }
    let end = replay(pool, &task, &actions, false, seed)
        .await?
        .pop()
        .expect("a replay returns at least one point");
    spec.visited = end.visited.iter().map(|u| templated(u, bases)).collect();
    spec.final_answer = end.final_answer.clone();
    Ok(Recorded { spec, end })
}
