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

/// The random policy (a valid action on a random element at each step) on the run's
/// held-out episodes, once, beside the untrained model's evaluation: the floor every
/// curve of the run is read against. Its campaign's id is derived from the run, so a run
/// resumed after a crash finds it rather than running it twice.
async fn random_baseline(ctx: &Ctx<'_>) -> Result<(f64, uuid::Uuid), RunError> {
    const RANDOM: &str = "random";
    if !ctx.engine.policy_names().iter().any(|n| n == RANDOM) {
        ctx.engine
            .register_policy(std::sync::Arc::new(policy::RandomPolicy));
    }
    let mut spec = eval_spec(&ctx.cfg, RANDOM, 0);
    spec.name = Some(format!(
        "{} · random policy on the held-out episodes",
        ctx.cfg.name
    ));
    let id = campaign_id(ctx.run, "random baseline");
    let id = ctx.engine.create_campaign_as(id, spec).await?;
    run_campaign(ctx, 0, id).await?;
    let v = ctx
        .engine
        .store()
        .get_campaign(id)
        .await?
        .ok_or(RunError::NoRun(id))?;
    Ok((v.success_rate.unwrap_or(0.0), id))
}

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
    // An update that published nothing leaves the version, and so its evaluation, as is.
    if idx > 0
        && it.version.is_none()
        && let Some(prev) = before
            .iter()
            .rev()
            .find(|b| b.idx < it.idx && b.eval_success.is_some())
    {
        stamp(&mut report, Phase::Eval, start_ms);
        store
            .update_iteration(
                ctx.run,
                it.idx,
                IterationUpdate {
                    phase: Some(Stage::Done),
                    eval_success: prev.eval_success,
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
        let (success, campaign) = random_baseline(ctx).await?;
        report["baselines"]["random"] = serde_json::json!({
            "success": success, "campaign": campaign,
        });
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
