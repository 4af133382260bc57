//! The update phase: the iteration's rollouts (and, for filtered behaviour cloning, the
//! replay window's) judged, selected and trained on from the newest published version,
//! which with overlap is the previous iteration's (the schedule starts update j after
//! update j − 1). Each step's staleness (versions behind that parent) is read from its
//! episode's policy card; with overlap, GRPO drops steps past the bound and the update's
//! decoupled-PPO weights correct the rest (their behaviour log-probabilities are the
//! recorded ones, see [`crate::data::samples`]). Filtered behaviour cloning keeps its
//! replay window whatever its age: it has no importance weights to correct with.
//!
//! The published version is recorded, then the `current` link moves to it, so rollouts
//! in flight start their next episodes on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use inference::version_link::promote;
use policy::traces::{self, Blobs};
use store::{IterationUpdate, IterationView};
use training::select::FbcFilter;
use training::{AdamWConfig, Objective, TrainConfig};

use super::{CURRENT, Ctx, Event, current_version, now_ms, reload, stamp};
use crate::external::{self, TrainerChoice};
use crate::update as pipeline;
use crate::{RunError, data, staleness};
use store::{Phase, Stage};

/// The index of a version directory of the run (`dir/v{i}` → i); anything else is the
/// base model (0).
fn index_of(version: &Path, dir: &Path) -> u32 {
    if version.parent() != Some(dir) {
        return 0;
    }
    version
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix('v'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Removes a superseded version's AdamW moments once the next version of the same run is
/// published and recorded: only the newest version is trained from again (a resumed run
/// loads the recorded one), and at twice the weights' size the moments were most of a run's
/// disk (SmolLM2-135M: 1.1 of 1.6 GB a version; 14 iterations filled 21 GB). A version
/// without them still loads, and a run branched from it starts fresh moments.
fn drop_moments(version: &Path, dir: &Path) {
    if version.parent() != Some(dir) {
        return; // the base model, or a version of another run: not this run's to prune
    }
    let file = version.join(training::version::OPTIMIZER);
    match std::fs::remove_file(&file) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(file = %file.display(), error = %e, "could not remove superseded moments")
        }
    }
}

/// The frozen model the KL term measures against: the warm-started version once a run
/// that starts from demonstrations is past them (the penalty then keeps what the
/// demonstrations taught), else the run's base.
fn reference_version(ctx: &Ctx<'_>, idx: u32) -> PathBuf {
    let warm = ctx.cfg.fbc_iterations;
    if ctx.cfg.demonstrator.is_some() && warm > 0 && idx > warm {
        ctx.dir.join(format!("v{warm}"))
    } else {
        super::base_version(&ctx.cfg, &ctx.dir)
    }
}

pub(super) async fn run(ctx: &Ctx<'_>, idx: u32) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let (start_ms, started) = (now_ms(), Instant::now());
    let before = store.run_iterations(ctx.run).await?;
    let it: IterationView = reload(store, ctx.run, idx as i32).await?;
    let parent = current_version(ctx).await?;
    let out = ctx.dir.join(format!("v{idx}"));
    let objective = ctx.cfg.objective_at(idx);
    let mut report = it.report.clone().unwrap_or_else(|| serde_json::json!({}));
    let mut update = IterationUpdate {
        phase: Some(Stage::Eval),
        parent_version: Some(parent.display().to_string()),
        ..Default::default()
    };
    let published =
        out.join(training::version::LINEAGE).is_file() || crate::served::is_served(&out);
    if published {
        // Published before the process stopped, not recorded: taken as it is.
        update.version = Some(out.display().to_string());
    } else {
        // FBC replays the last `replay_iterations` iterations (WebGym's window: 4; TTI's
        // buffer: all of them); GRPO is on-policy.
        let mut campaigns = Vec::new();
        if objective == Objective::Fbc {
            let window = i32::try_from(ctx.cfg.replay_iterations).unwrap_or(i32::MAX);
            for b in before
                .iter()
                .filter(|b| b.idx > 0 && b.idx.saturating_add(window) > it.idx && b.idx < it.idx)
            {
                campaigns.extend(b.rollout_campaigns.iter().copied());
            }
        }
        campaigns.extend(it.rollout_campaigns.iter().copied());
        let episodes = traces::from_campaigns(store, &campaigns).await?;
        let source = match ctx.cfg.served {
            Some(_) => data::Source::Served,
            None => data::Source::Onnx,
        };
        let mut collected = data::collect_from(&episodes, false, source);
        let parent_index = index_of(&parent, &ctx.dir);
        let (base, dir) = (super::base_version(&ctx.cfg, &ctx.dir), ctx.dir.clone());
        let known =
            tokio::task::spawn_blocking(move || staleness::known(&base, &dir, parent_index))
                .await
                .map_err(|e| RunError::Config(format!("fingerprinting versions: {e}")))?;
        let of_steps = staleness::of_steps(&collected, &episodes, &known, parent_index);
        let (too_stale, of_steps) = match (ctx.cfg.max_staleness(), objective) {
            (Some(n), Objective::Grpo) => {
                let (mut gone, left) = staleness::drop_stale(&mut collected, of_steps, n);
                for why in [staleness::TOO_STALE, staleness::UNKNOWN_VERSION] {
                    gone.entry(why).or_default();
                }
                (gone, left)
            }
            _ => (BTreeMap::new(), of_steps),
        };
        let choice = pipeline::Choice {
            objective,
            fbc: FbcFilter::default(),
            weighting: ctx.cfg.weighting(),
            seed: ctx.cfg.seed ^ u64::from(idx),
        };
        let selection = pipeline::select(&collected, &choice);
        let mut dropped = serde_json::to_value(&selection.dropped).unwrap_or_default();
        for (why, n) in &too_stale {
            dropped[*why] = (*n).into();
        }
        update.dropped = Some(dropped.clone());
        let histogram = staleness::histogram(&of_steps, &selection.kept);
        report["staleness"] = serde_json::to_value(&histogram).unwrap_or_default();
        if selection.kept.is_empty() {
            update.samples = Some(0);
            tracing::info!(iteration = idx, "nothing selected; the version stays");
        } else if let TrainerChoice::External(trainer) = &ctx.cfg.trainer {
            let job = external::Job {
                store,
                trainer,
                run: ctx.run,
                iteration: idx,
                objective,
                episodes: &episodes,
                at: &collected.at,
                kept: &selection.kept,
                parent: &parent,
                out: &out,
                work: &external::work_dir(&ctx.dir, idx),
                dylib: &ctx.dylib,
                served: ctx.cfg.served.as_ref().map(|served| external::ServedJob {
                    cfg: &ctx.cfg,
                    served,
                    used: known.iter().map(|k| k.name.clone()).collect(),
                }),
                lineage: serde_json::json!({
                    "run": ctx.run, "iteration": idx, "campaigns": campaigns,
                    "objective": objective.to_string(), "dropped": dropped,
                    "not_trainable": collected.skipped, "staleness": histogram,
                }),
            };
            match external::update(job, &mut collected.skipped).await? {
                external::Outcome::Nothing => update.samples = Some(0),
                external::Outcome::Version { samples, report: r } => {
                    update.samples = Some(samples as i32);
                    update.version = Some(out.display().to_string());
                    // The trainer's own figure, when its report gives one, is the curve's.
                    let own = &r["trainer_report"];
                    update.loss = own["train_loss"].as_f64().or(own["loss"].as_f64());
                    report["external"] = r;
                }
                external::Outcome::ServedModel {
                    name,
                    samples,
                    report: r,
                } => {
                    update.samples = Some(samples as i32);
                    update.version = Some(out.display().to_string());
                    let own = &r["trainer_report"];
                    update.loss = own["train_loss"].as_f64().or(own["loss"].as_f64());
                    report["external"] = r;
                    report["served_model"] = name.into();
                }
            }
        } else {
            let devices = &ctx.cfg.devices;
            let replay_started = Instant::now();
            let on = pipeline::ReplayOn {
                parent: &parent,
                dylib: &ctx.dylib,
                device: devices.policy_device(),
                threads: devices.policy_threads as usize,
                blobs: Blobs::Store(store.clone()),
                // Taken out while it replays, put back after (a failed replay drops it).
                resident: ctx.frozen.lock().ok().and_then(|mut f| f.take()),
            };
            let resident = on.resident.is_some();
            let (samples, frozen) =
                pipeline::replay(on, &episodes, &mut collected, &selection.kept, || {}).await?;
            if let Ok(mut slot) = ctx.frozen.lock() {
                *slot = Some(frozen);
            }
            let replay_s = replay_started.elapsed().as_secs_f64();
            let cfg = TrainConfig {
                objective,
                optimizer: AdamWConfig {
                    lr: ctx.cfg.learning_rate(),
                    warmup_steps: ctx.cfg.warmup_steps as usize,
                    schedule: ctx.cfg.lr_schedule,
                    ..AdamWConfig::default()
                },
                micro_batch: ctx.cfg.micro_batch as usize,
                accumulation: ctx.cfg.accumulation as usize,
                epochs: ctx.cfg.epochs as usize,
                seed: ctx.cfg.seed ^ u64::from(idx),
                precision: devices.precision,
                regularization: ctx.cfg.regularization,
                guard: ctx.cfg.guard,
                top_layers: ctx.cfg.top_layers.map(|n| n as usize),
                lora: ctx.cfg.lora.clone(),
                share_prompts: ctx.cfg.share_prompts,
                ..TrainConfig::default()
            };
            let n = samples.len();
            let job = pipeline::TrainJob {
                parent: parent.clone(),
                out: out.clone(),
                reference: Some(reference_version(ctx, idx)),
                cfg,
                device: (devices.train, "devices.train"),
                samples,
                lineage: serde_json::json!({
                    "run": ctx.run, "iteration": idx, "campaigns": campaigns,
                    "objective": objective.to_string(), "samples": n,
                    "dropped": dropped, "not_trainable": collected.skipped,
                    "staleness": histogram,
                }),
                // Taken out while it trains: an update that fails drops it, and the next
                // one loads the last published version.
                resident: ctx.trainer.lock().ok().and_then(|mut t| t.take()),
            };
            let t = pipeline::train(job, |done, total, loss| {
                (ctx.events)(Event::Step {
                    iteration: idx,
                    done,
                    total,
                    loss,
                })
            })
            .await?;
            let r = &t.report;
            update.samples = Some(n as i32);
            update.loss = Some(r.last_loss);
            update.version = Some(out.display().to_string());
            report["update"] = serde_json::json!({
                "first_loss": r.first_loss, "last_loss": r.last_loss, "steps": r.steps,
                "tokens": r.tokens, "samples_per_s": r.samples_per_s, "grpo": r.grpo,
                "health": r.health, "guard": r.guard,
                "seconds": r.seconds, "device": t.place,
                // Where the rest of the phase goes: a big model's own weight.
                "replay_s": replay_s, "load_s": t.load_s, "publish_s": t.publish_s,
                "resident": t.kept, "replay_resident": resident,
            });
            if let Ok(mut slot) = ctx.trainer.lock() {
                *slot = Some(t.trainer);
            }
        }
    }
    if let Some(v) = &update.version {
        store.set_run_version(ctx.run, v).await?;
        // Recorded first: a run stopped in between points the link at the recorded
        // version when it restarts (`prepare`).
        let link = ctx.dir.join(CURRENT);
        promote(Path::new(v), &link).map_err(|e| RunError::io(&link, e))?;
        if Path::new(v) != parent {
            drop_moments(&parent, &ctx.dir);
        }
    }
    report["objective"] = objective.to_string().into();
    stamp(&mut report, Phase::Train, start_ms);
    update.report = Some(report);
    update.train_ms = Some(started.elapsed().as_millis() as i64);
    store.update_iteration(ctx.run, it.idx, update).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_numbered_by_their_directory_in_the_run() {
        let dir = Path::new("/runs/r");
        assert_eq!(index_of(&dir.join("v3"), dir), 3);
        assert_eq!(index_of(Path::new("/models/tiny-text"), dir), 0);
        // A base model that is another run's version is still this run's version 0.
        assert_eq!(index_of(Path::new("/runs/other/v7"), dir), 0);
    }
}
