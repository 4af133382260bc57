//! Baselines on the run's held-out episodes, evaluated once beside the untrained model:
//! the `random` policy, and (when the run asks) the best constant action per task, the
//! single action that solves most of a task's held-out instances. A policy that learned
//! one fixed action per task reaches the second; only one that reads beats it.

use std::collections::BTreeMap;
use std::sync::Arc;

use policy::{ConstantPolicy, Policy};
use store::{EpisodeFilter, TaskFilter};
use uuid::Uuid;

use super::{Ctx, campaign_id, eval_spec, run_campaign};
use crate::RunError;

/// A baseline policy's campaign on the held-out episodes (of `task` alone, when given:
/// episode seeds depend on the task, not on the campaign's other tasks, so they are the
/// same instances), created under an id derived from the run (a run resumed after a crash
/// finds it rather than running it twice), run, and its episodes' outcomes by task.
async fn evaluate(
    ctx: &Ctx<'_>,
    policy: &str,
    task: Option<&str>,
    purpose: &str,
) -> Result<(Uuid, Vec<(String, bool)>), RunError> {
    let mut spec = eval_spec(&ctx.cfg, policy, 0);
    spec.name = Some(super::campaign_name(&ctx.cfg.name, purpose));
    if let Some(task) = task {
        spec.tasks = Some(TaskFilter {
            ids: vec![task.to_string()],
            ..Default::default()
        });
    }
    let id = campaign_id(ctx.run, purpose);
    let id = ctx.engine.create_campaign_as(id, spec).await?;
    run_campaign(ctx, 0, id).await?;
    let (eps, _) = ctx
        .engine
        .store()
        .list_episodes(&EpisodeFilter::campaign(id), 100_000, 0)
        .await?;
    Ok((
        id,
        eps.into_iter()
            .map(|e| (e.task_id, e.success == Some(true)))
            .collect(),
    ))
}

fn rate(outcomes: &[(String, bool)]) -> f64 {
    outcomes.iter().filter(|(_, ok)| *ok).count() as f64 / outcomes.len().max(1) as f64
}

/// The random policy on the held-out episodes: `{"success", "campaign"}`.
pub(super) async fn random(ctx: &Ctx<'_>) -> Result<serde_json::Value, RunError> {
    const RANDOM: &str = "random";
    if !ctx.engine.policy_names().iter().any(|n| n == RANDOM) {
        ctx.engine.register_policy(Arc::new(policy::RandomPolicy));
    }
    let (id, outcomes) = evaluate(ctx, RANDOM, None, "random baseline").await?;
    Ok(serde_json::json!({"success": rate(&outcomes), "campaign": id}))
}

/// The best constant action per task, among the first actions the policies evaluated on
/// `seen` (campaigns on the same held-out episodes) took on it: each candidate runs as a
/// constant policy on the task's held-out episodes, and the task keeps its best.
/// `{"success", "candidates": {task: [action]}, "per_task": {task: {"action", "solved",
/// "episodes"}}}`. A task none of whose first actions is an action counts as solved by
/// none.
pub(super) async fn best_constant(
    ctx: &Ctx<'_>,
    seen: &[Uuid],
) -> Result<serde_json::Value, RunError> {
    let (tasks, episodes) = first_actions(ctx, seen).await?;
    let cap = ctx.cfg.best_constant_candidates as usize;
    let mut per_task = serde_json::Map::new();
    let mut tried = serde_json::Map::new();
    let mut solved_all = 0;
    for (task, taken) in &tasks {
        let candidates = ranked(taken, cap);
        // (action, solved, episodes) of the best so far.
        let mut best: Option<(String, usize, usize)> = None;
        for policy in &candidates {
            let action = policy.action().to_string();
            ctx.engine.register_policy(Arc::new(policy.clone()));
            let purpose = format!("constant baseline {action} on {task}");
            let (_, outcomes) = evaluate(ctx, policy.name(), Some(task), &purpose).await?;
            let solved = outcomes.iter().filter(|(_, ok)| *ok).count();
            if best.as_ref().is_none_or(|b| solved > b.1) {
                best = Some((action, solved, outcomes.len()));
            }
        }
        tried.insert(
            task.clone(),
            candidates.iter().map(|c| c.action().to_string()).collect(),
        );
        if let Some((action, solved, n)) = best {
            solved_all += solved;
            per_task.insert(
                task.clone(),
                serde_json::json!({"action": action, "solved": solved, "episodes": n}),
            );
        }
    }
    Ok(serde_json::json!({
        "success": solved_all as f64 / episodes.max(1) as f64,
        "candidates": tried,
        "per_task": per_task,
    }))
}

/// How often an action was a task's first, and on how many of those episodes it succeeded.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Taken {
    times: usize,
    succeeded: usize,
}

/// The first actions of the campaigns' episodes by task, and the number of held-out
/// episodes (those of the first campaign).
async fn first_actions(
    ctx: &Ctx<'_>,
    campaigns: &[Uuid],
) -> Result<(BTreeMap<String, BTreeMap<String, Taken>>, usize), RunError> {
    let store = ctx.engine.store();
    let mut tasks: BTreeMap<String, BTreeMap<String, Taken>> = BTreeMap::new();
    let mut episodes = 0;
    for (i, c) in campaigns.iter().enumerate() {
        let (eps, _) = store
            .list_episodes(&EpisodeFilter::campaign(*c), 100_000, 0)
            .await?;
        if i == 0 {
            episodes = eps.len();
        }
        for e in eps {
            let Some(d) = store.get_episode(e.id).await? else {
                continue;
            };
            if let Some(first) = d.steps.first() {
                let t = tasks
                    .entry(e.task_id.clone())
                    .or_default()
                    .entry(first.core.action.clone())
                    .or_default();
                t.times += 1;
                t.succeeded += usize::from(e.success == Some(true));
            }
        }
    }
    Ok((tasks, episodes))
}

/// At most `cap` of a task's first actions as constant policies: those that succeeded more
/// often first (the likeliest best), then those taken more often; outputs that are no
/// action are left out.
fn ranked(taken: &BTreeMap<String, Taken>, cap: usize) -> Vec<ConstantPolicy> {
    let mut order: Vec<(&String, &Taken)> = taken.iter().collect();
    order.sort_by(|a, b| {
        (b.1.succeeded, b.1.times)
            .cmp(&(a.1.succeeded, a.1.times))
            .then_with(|| a.0.cmp(b.0))
    });
    order
        .into_iter()
        .filter_map(|(text, _)| ConstantPolicy::parse(text).ok())
        .take(cap)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_that_succeeded_come_first_then_the_frequent_and_no_non_actions() {
        let taken: BTreeMap<String, Taken> = [
            ("click(1)", 9, 0),
            ("click(2)", 2, 2),
            ("type(3, \"x\")", 4, 1),
            ("not an action", 20, 5),
            ("click(4)", 3, 0),
        ]
        .into_iter()
        .map(|(a, times, succeeded)| (a.to_string(), Taken { times, succeeded }))
        .collect();
        let names = |cap| {
            ranked(&taken, cap)
                .iter()
                .map(|p| p.action().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(16),
            ["click(2)", "type(3, \"x\")", "click(1)", "click(4)"]
        );
        assert_eq!(names(2), ["click(2)", "type(3, \"x\")"]);
    }
}
