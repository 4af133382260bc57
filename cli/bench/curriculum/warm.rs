//! The warm start: the teacher's episodes on the training tasks, each step recorded as the
//! base model would have written it, one filtered-BC update on them, then RL from that
//! version for what is left of the budget (as WebAgent-R1 warms up before RL).

use std::time::Instant;

use anyhow::Context;
use engine::CampaignSpec;
use policy::traces::{self, Blobs};
use store::TaskFilter;
use training::select::FbcFilter;
use training::{AdamWConfig, Objective, TrainConfig};
use trainloop::update as pipeline;
use trainloop::{RunConfig, data, run};

use super::curve::{Curve, Output, one_run};
use super::{CurriculumArgs, Suite};
use crate::args::Common;
use crate::progress;
use crate::setup::{Env, engine_with};

/// Runs the warm start and the RL run after it. `cfg`: the RL run's config as the other
/// variants have it (its `model` is replaced by the warm-started version).
pub async fn run(
    common: &Common,
    env: &Env,
    a: &CurriculumArgs,
    train: &[String],
    cfg: serde_json::Value,
    name: &str,
    output: Output,
) -> anyhow::Result<Curve> {
    let started = Instant::now();
    let store = env.db.store.clone();
    let model = std::path::PathBuf::from(
        cfg["model"]
            .as_str()
            .context("the run config names no model")?,
    );
    let teacher = match a.suite {
        Suite::Miniwob => "miniwob-solver",
        Suite::Bundled => "scripted",
    };
    let policy = format!("demonstrated-{teacher}");
    let rl = RunConfig::parse(&cfg.to_string()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let dylib = common.models.onnx_options(common, model.clone())?.dylib;
    let teacher_policy = policy::PolicyRegistry::builtin()
        .get(teacher)
        .with_context(|| format!("no built-in policy {teacher}"))?;
    let demo = run::demonstrator(&rl, &policy, teacher_policy, &dylib)?;
    let demo_engine = engine_with(common, &env.db, vec![demo])?;
    let spec = CampaignSpec {
        name: Some(format!("bench curriculum · warm start ({policy})")),
        policy: Some(policy.clone()),
        tasks: Some(TaskFilter {
            ids: train.to_vec(),
            ..Default::default()
        }),
        rollouts_per_task: Some(a.rollouts_per_task),
        max_steps: Some(a.long),
        seed: Some(a.seed ^ 0x3A53_0000),
        ..Default::default()
    };
    let campaign = demo_engine.create_campaign(spec).await?;
    let runner = demo_engine.clone();
    let watch = tokio::spawn(async move { runner.run_campaign(campaign).await });
    if output == Output::Bars {
        let _ = progress::watch(&store, &[campaign]).await;
    }
    let status = watch.await??;
    demo_engine.shutdown().await;
    let v = store
        .get_campaign(campaign)
        .await?
        .context("the warm-start campaign vanished")?;
    let warm_steps = v.steps.max(0) as u64;
    println!(
        "{name}: warm start: {policy} campaign {campaign} {status}: {}/{} episodes succeeded, {warm_steps} environment steps (counted toward this variant's budget)",
        v.successes, v.counts.finished
    );
    let out = common
        .data_dir
        .join("runs")
        .join(format!("bench-warm-{campaign}"));
    if let Err(e) = update(common, &store, a, &rl, campaign, &model, &out).await {
        // A teacher whose actions the model cannot write (or a warm-up that failed every
        // episode) selects nothing: the variant is reported as not run rather than ending
        // the benchmark.
        println!("{name} not run: the warm start's FBC update failed: {e:#}");
        return Ok(Curve {
            variant: name.into(),
            run: None,
            state: super::curve::Ending::NotRun(format!("{e:#}")),
            warm_env_steps: warm_steps,
            env_steps: warm_steps,
            wall_s: started.elapsed().as_secs_f64(),
            points: Vec::new(),
        });
    }
    let mut cfg = cfg;
    cfg["model"] = serde_json::json!(out);
    let left = a.budget_steps.saturating_sub(warm_steps);
    if left == 0 {
        // The warm start spent the budget: its version's iteration 0 only (one iteration
        // with a budget of 1 step would still roll out; this evaluates and stops).
        println!("{name}: the warm start used the whole budget: no RL iteration");
        cfg["max_env_steps"] = serde_json::json!(1);
        cfg["iterations"] = serde_json::json!(1);
        let mut c = one_run(common, env, name, cfg, warm_steps, started, output).await?;
        c.points.retain(|p| p.iteration == 0);
        return Ok(c);
    }
    cfg["max_env_steps"] = serde_json::json!(left);
    one_run(common, env, name, cfg, warm_steps, started, output).await
}

/// The filtered-BC update on the warm-start campaign, with the run's learning rate on its
/// trainer device: the same pipeline as `train step` and a run's train phase.
async fn update(
    common: &Common,
    store: &store::Store,
    a: &CurriculumArgs,
    rl: &RunConfig,
    campaign: uuid::Uuid,
    model: &std::path::Path,
    out: &std::path::Path,
) -> anyhow::Result<()> {
    let episodes = traces::from_campaigns(store, &[campaign]).await?;
    let dylib = common
        .models
        .onnx_options(common, model.to_path_buf())?
        .dylib;
    let cfg = TrainConfig {
        objective: Objective::Fbc,
        optimizer: AdamWConfig {
            lr: rl.learning_rate(),
            ..AdamWConfig::default()
        },
        epochs: a.warm_epochs,
        seed: a.seed,
        precision: rl.devices.precision,
        ..TrainConfig::default()
    };
    let outcome = pipeline::run(
        pipeline::Update {
            episodes: &episodes,
            collected: data::collect(&episodes, false),
            choice: pipeline::Choice {
                objective: Objective::Fbc,
                fbc: FbcFilter::default(),
                weighting: rl.weighting(),
                seed: a.seed,
            },
            replay: pipeline::ReplayOn {
                parent: model,
                dylib: &dylib,
                device: inference::Device::Cpu,
                threads: 2,
                blobs: Blobs::Store(store.clone()),
                resident: None,
            },
            train: pipeline::TrainJob {
                parent: model.to_path_buf(),
                out: out.to_path_buf(),
                reference: None,
                cfg: cfg.clone(),
                device: (rl.devices.train, "devices.train"),
                samples: Vec::new(),
                lineage: serde_json::json!({
                    "source": {"campaigns": [campaign]},
                    "objective": "fbc",
                    "config": cfg,
                    "warm_start": true,
                }),
                resident: None,
            },
        },
        || {},
        |_, _, _| {},
    )
    .await?;
    match outcome.trained {
        Some(t) => {
            println!(
                "warm start: {} samples, loss {:.4} -> {:.4}, version {}",
                outcome.samples,
                t.report.first_loss,
                t.report.last_loss,
                out.display()
            );
            Ok(())
        }
        None => anyhow::bail!(
            "no step selected or replayable ({} of {} trainable steps kept)",
            outcome.selection.kept.len(),
            outcome.collected.metas.len()
        ),
    }
}
