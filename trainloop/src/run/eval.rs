//! The evaluation phase: the greedy policy on the held-out episodes, running exactly the
//! iteration's version. The greedy policy follows its own `eval` link, which only this
//! phase moves (and one evaluation runs at a time), so a version published by the next
//! update while this one runs does not reach it.

use std::path::PathBuf;
use std::time::Instant;

use store::IterationUpdate;

use super::{
    Ctx, EVAL, campaign_id, eval_spec, now_ms, policy_names, reload, run_campaign, serve, stamp,
};
use crate::RunError;
use store::{Phase, Stage};

pub(super) async fn run(ctx: &Ctx<'_>, idx: u32) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let (start_ms, started) = (now_ms(), Instant::now());
    let i = idx as i32;
    let it = if idx == 0 {
        store
            .start_iteration(ctx.run, 0, Stage::Eval, &serde_json::json!({}))
            .await?
    } else {
        reload(store, ctx.run, i).await?
    };
    let before = store.run_iterations(ctx.run).await?;
    let mut report = it.report.clone().unwrap_or_else(|| serde_json::json!({}));
    // The steps rolled out up to this iteration: once they reach the budget, no later
    // rollout starts and this is the run's last iteration.
    let spent = super::budget(before.iter().filter(|b| b.idx <= i), &ctx.cfg);
    let skipped = !crate::schedule::evaluates(idx, ctx.cfg.eval_every, ctx.cfg.iterations, spent);
    // An update that published nothing leaves the version, and so its evaluation, as is:
    // the evaluation of the iteration that published it (or of the base), if it had one.
    let unchanged = (idx > 0 && it.version.is_none())
        .then(|| {
            before
                .iter()
                .rev()
                .find(|b| b.idx < it.idx && (b.version.is_some() || b.idx == 0))
                .and_then(|b| b.eval_success)
        })
        .flatten();
    if skipped || unchanged.is_some() {
        stamp(&mut report, Phase::Eval, start_ms);
        store
            .update_iteration(
                ctx.run,
                it.idx,
                IterationUpdate {
                    phase: Some(Stage::Done),
                    eval_success: unchanged.filter(|_| !skipped),
                    eval_ms: Some(0),
                    report: Some(report),
                    ..Default::default()
                },
            )
            .await?;
        return Ok(());
    }
    // The iteration's own version: the base model for iteration 0, else what its update
    // published (or, had none published and nothing been evaluated before, its parent).
    let version = it
        .version
        .clone()
        .or_else(|| it.parent_version.clone())
        .map_or_else(|| super::base_version(&ctx.cfg, &ctx.dir), PathBuf::from);
    serve(ctx, EVAL, &version, &ctx.policies.greedy).await?;
    let id = match it.eval_campaign {
        Some(id) => id,
        None => {
            let spec = eval_spec(&ctx.cfg, &policy_names(ctx.run).1, idx);
            let id = campaign_id(ctx.run, &format!("iteration {idx} evaluation"));
            let id = ctx.engine.create_campaign_as(id, spec).await?;
            store
                .update_iteration(
                    ctx.run,
                    it.idx,
                    IterationUpdate {
                        eval_campaign: Some(id),
                        ..Default::default()
                    },
                )
                .await?;
            id
        }
    };
    run_campaign(ctx, idx, id).await?;
    let v = store.get_campaign(id).await?.ok_or(RunError::NoRun(id))?;
    if idx == 0 {
        let random = super::baseline::random(ctx).await?;
        let random_campaign = random["campaign"].as_str().and_then(|s| s.parse().ok());
        report["baselines"]["random"] = random;
        if ctx.cfg.best_constant {
            let seen: Vec<uuid::Uuid> = [Some(id), random_campaign].into_iter().flatten().collect();
            report["baselines"]["best_constant"] =
                super::baseline::best_constant(ctx, &seen).await?;
        }
    }
    stamp(&mut report, Phase::Eval, start_ms);
    store
        .update_iteration(
            ctx.run,
            it.idx,
            IterationUpdate {
                phase: Some(Stage::Done),
                eval_success: Some(v.success_rate.unwrap_or(0.0)),
                eval_ms: Some(started.elapsed().as_millis() as i64),
                report: Some(report),
                ..Default::default()
            },
        )
        .await?;
    Ok(())
}
