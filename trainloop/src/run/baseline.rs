//! Baselines on the run's held-out episodes, evaluated once beside the untrained model:
//! the `random` policy, and (when the run asks) the best constant action per task, the
//! single action that solves most of a task's held-out instances. A policy that learned
//! one fixed action per task reaches the second; only one that reads beats it.

use std::collections::BTreeMap;
use std::sync::Arc;

use policy::{ConstantPolicy, Policy};
use store::EpisodeFilter;
use uuid::Uuid;

use super::{Ctx, campaign_id, eval_spec, run_campaign};
use crate::RunError;

/// At most this many candidate actions are tried (the ones the evaluated policies took
/// most often): each is a campaign over every held-out episode.
pub const MAX_CANDIDATES: usize = 16;

/// A baseline policy's campaign on the held-out episodes, created under an id derived from
/// the run (a run resumed after a crash finds it rather than running it twice), run, and
/// its episodes' outcomes by task.
async fn evaluate(
    ctx: &Ctx<'_>,
    policy: &str,
    purpose: &str,
) -> Result<(Uuid, Vec<(String, bool)>), RunError> {
    let mut spec = eval_spec(&ctx.cfg, policy, 0);
    spec.name = Some(format!("{} · {purpose}", ctx.cfg.name));
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
    let (id, outcomes) = evaluate(ctx, RANDOM, "random baseline").await?;
    Ok(serde_json::json!({"success": rate(&outcomes), "campaign": id}))
}

/// The best constant action per task, among the first actions the policies evaluated on
/// `seen` (campaigns on the same held-out episodes) took: each candidate runs as a
/// constant policy on every held-out episode, and each task keeps its best.
/// `{"success", "candidates", "per_task": {task: {"action", "solved", "episodes"}}}`.
pub(super) async fn best_constant(
    ctx: &Ctx<'_>,
    seen: &[Uuid],
) -> Result<serde_json::Value, RunError> {
    let candidates = first_actions(ctx, seen).await?;
    // task → (action, solved, episodes) of the best candidate so far.
    let mut best: BTreeMap<String, (String, usize, usize)> = BTreeMap::new();
    for policy in &candidates {
        let action = policy.action().to_string();
        let name = policy.name().to_string();
        ctx.engine.register_policy(Arc::new(policy.clone()));
        let (_, outcomes) = evaluate(ctx, &name, &format!("constant baseline {action}")).await?;
        let mut by_task: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (task, ok) in &outcomes {
            let e = by_task.entry(task.as_str()).or_default();
            e.0 += usize::from(*ok);
            e.1 += 1;
        }
        for (task, (solved, episodes)) in by_task {
            let slot = best
                .entry(task.to_string())
                .or_insert_with(|| (action.clone(), solved, episodes));
            if solved > slot.1 {
                *slot = (action.clone(), solved, episodes);
            }
        }
    }
    let (solved, episodes) = best
        .values()
        .fold((0, 0), |(s, n), (_, a, b)| (s + a, n + b));
    let per_task: serde_json::Map<String, serde_json::Value> = best
        .into_iter()
        .map(|(task, (action, solved, episodes))| {
            (
                task,
                serde_json::json!({"action": action, "solved": solved, "episodes": episodes}),
            )
        })
        .collect();
    Ok(serde_json::json!({
        "success": solved as f64 / episodes.max(1) as f64,
        "candidates": candidates.iter().map(|c| c.action().to_string()).collect::<Vec<_>>(),
        "per_task": per_task,
    }))
}

/// The distinct first actions of the campaigns' episodes, most frequent first, at most
/// [`MAX_CANDIDATES`]; outputs that are no action are left out.
async fn first_actions(ctx: &Ctx<'_>, campaigns: &[Uuid]) -> Result<Vec<ConstantPolicy>, RunError> {
    let store = ctx.engine.store();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for c in campaigns {
        let (eps, _) = store
            .list_episodes(&EpisodeFilter::campaign(*c), 100_000, 0)
            .await?;
        for e in eps {
            let Some(d) = store.get_episode(e.id).await? else {
                continue;
            };
            if let Some(first) = d.steps.first() {
                *counts.entry(first.core.action.clone()).or_default() += 1;
            }
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(ranked
        .into_iter()
        .filter_map(|(text, _)| ConstantPolicy::parse(&text).ok())
        .take(MAX_CANDIDATES)
        .collect())
}
