//! The rollout phase: the iteration's horizons from the curriculum, one rollout campaign
//! per distinct horizon with the sampling policy (whatever version the `current` link
//! names when each episode starts), and the rollouts' figures.
//!
//! The plan reads the outcomes earlier iterations' rollouts recorded. With overlap these
//! are the rollouts finished so far, which are all earlier iterations' (rollouts run one
//! iteration at a time, in order), so the curriculum sees what the synchronous loop sees;
//! only the version that produced them may be older than it would be there.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use engine::CampaignSpec;
use store::{EpisodeFilter, IterationUpdate, TaskFilter};

use super::{
    Ctx, campaign_id, catch_up, demo_name, now_ms, policy_names, reload, run_campaign, stamp,
};
use crate::curriculum::TaskOutcome;
use crate::{RunError, plan};
use store::{Phase, Stage};

pub(super) async fn run(ctx: &Ctx<'_>, idx: u32) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let (start_ms, started) = (now_ms(), Instant::now());
    let existing = store.run_iterations(ctx.run).await?;
    let i = idx as i32;
    let it = match existing.iter().find(|it| it.idx == i) {
        Some(it) => it.clone(),
        None => {
            let tasks: Vec<(String, usize)> = store
                .load_tasks(&ctx.cfg.train)
                .await?
                .iter()
                .map(|t| (t.id.to_string(), t.rubric.fact_count()))
                .collect();
            let before: Vec<_> = existing.into_iter().filter(|it| it.idx < i).collect();
            let horizons = plan::horizons(&ctx.cfg, &tasks, idx, &before);
            store
                .start_iteration(
                    ctx.run,
                    i,
                    Stage::Rollout,
                    &serde_json::to_value(&horizons).unwrap_or_default(),
                )
                .await?
        }
    };
    // The link names the newest recorded version (`prepare`, then every update moves it).
    catch_up(&ctx.policies.sample).await?;
    let horizons: BTreeMap<String, u32> =
        serde_json::from_value(it.horizons.clone()).map_err(|e| RunError::Config(e.to_string()))?;
    let mut campaigns = it.rollout_campaigns.clone();
    if campaigns.is_empty() {
        let mut by_horizon: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (task, h) in &horizons {
            by_horizon.entry(*h).or_default().push(task.clone());
        }
        // A warm start's iterations roll out the demonstrator (its steps in the model's
        // tokens), the others the model. A demonstrator is deterministic: k samples of one
        // seed would be one demonstration weighed k times, so it gets one per seed.
        let (policy, what, samples) = match &ctx.cfg.demonstrator {
            Some(d) if ctx.cfg.demonstrates(idx) => {
                (demo_name(ctx.run), format!("demonstrations by {d}"), 1)
            }
            _ => (
                policy_names(ctx.run).0,
                "rollouts".to_string(),
                ctx.cfg.group_at(idx),
            ),
        };
        for (h, ids) in by_horizon {
            let mut spec = CampaignSpec {
                name: Some(super::campaign_name(
                    &ctx.cfg.name,
                    &format!("iteration {idx} · {what} at horizon {h}"),
                )),
                policy: Some(policy.clone()),
                tasks: Some(TaskFilter {
                    ids,
                    ..Default::default()
                }),
                rollouts_per_task: Some(ctx.cfg.rollouts_per_task),
                samples_per_seed: Some(samples),
                max_steps: Some(h),
                seed: Some(
                    ctx.cfg.seed.wrapping_mul(1_000_003) ^ (u64::from(idx) << 20) ^ u64::from(h),
                ),
                ..Default::default()
            };
            ctx.cfg.web.apply(&mut spec);
            let id = campaign_id(ctx.run, &format!("iteration {idx} rollouts at horizon {h}"));
            campaigns.push(ctx.engine.create_campaign_as(id, spec).await?);
        }
        store
            .update_iteration(
                ctx.run,
                it.idx,
                IterationUpdate {
                    rollout_campaigns: Some(campaigns.clone()),
                    ..Default::default()
                },
            )
            .await?;
    }
    let (mut successes, mut finished, mut steps) = (0i64, 0i64, 0i64);
    let mut outcomes: HashMap<String, (u32, u32, u32)> = HashMap::new();
    for id in &campaigns {
        run_campaign(ctx, idx, *id).await?;
        let v = store.get_campaign(*id).await?.ok_or(RunError::NoRun(*id))?;
        successes += v.successes;
        finished += v.counts.finished;
        steps += v.steps;
        let (eps, _) = store
            .list_episodes(&EpisodeFilter::campaign(*id), 100_000, 0)
            .await?;
        for e in eps {
            let o = outcomes.entry(e.task_id.clone()).or_default();
            o.0 += 1;
            if e.success == Some(true) {
                o.1 += 1;
                o.2 = o.2.max(e.steps.max(0) as u32);
            }
        }
    }
    let tasks: BTreeMap<String, TaskOutcome> = outcomes
        .into_iter()
        .map(|(task, (n, ok, max_steps))| {
            let horizon = horizons.get(&task).copied().unwrap_or(0);
            (
                task,
                TaskOutcome {
                    horizon,
                    success: f64::from(ok) / f64::from(n.max(1)),
                    max_success_steps: max_steps,
                    rollouts: n,
                },
            )
        })
        .collect();
    // Keeps what an earlier, interrupted attempt stamped (nothing else writes the report
    // before the rollouts end).
    let mut report = reload(store, ctx.run, i)
        .await?
        .report
        .unwrap_or_else(|| serde_json::json!({}));
    report["tasks"] = serde_json::to_value(&tasks).unwrap_or_default();
    stamp(&mut report, Phase::Rollout, start_ms);
    store
        .update_iteration(
            ctx.run,
            it.idx,
            IterationUpdate {
                phase: Some(Stage::Train),
                train_success: Some(if finished > 0 {
                    successes as f64 / finished as f64
                } else {
                    0.0
                }),
                env_steps: Some(steps),
                rollout_ms: Some(started.elapsed().as_millis() as i64),
                judge_ms: Some(store.judge_ms(&campaigns).await?),
                report: Some(report),
                ..Default::default()
            },
        )
        .await?;
    Ok(())
}
