//! One training run, iteration by iteration: horizons from the curriculum, rollout
//! campaigns of the current version on the training tasks (groups of rollouts at
//! temperature 1), judged, selected, one update, a published and promoted version, then a
//! greedy evaluation campaign on the held-out tasks at a fixed horizon and the iteration's
//! figures. Iteration 0 evaluates the untrained model.
//!
//! Every phase ends with one write to the store, and every phase can be redone: a run
//! killed at any point resumes at the iteration and phase it was in. Campaigns resume
//! through the durable queue; an update interrupted before its version was published is
//! redone from the last published version, and one published but not recorded is taken
//! as it is (versions are published atomically and never overwritten), so no update is
//! ever applied twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::policy::follow::Following;
use engine::policy::onnx::grammar::Constraint;
use engine::policy::onnx::version_link::promote;
use engine::policy::onnx::{self, Device, Model, OnnxOptions};
use engine::policy::{BatchLimits, Policy};
use engine::store::{EpisodeFilter, IterationUpdate, IterationView, RunView, Store, TaskFilter};
use engine::traces::{self, Blobs, Replayer};
use engine::{CampaignSpec, Engine};
use rand::SeedableRng;
use training::select::{FbcFilter, select_fbc, select_grpo};
use training::{AdamWConfig, Objective, TrainConfig, Trainer};
use uuid::Uuid;

use crate::config::{HeldOut, RunConfig};
use crate::curriculum::TaskOutcome;
use crate::external::{self, TrainerChoice};
use crate::{RunError, data, plan};

/// What a run reports while it works.
#[derive(Debug, Clone)]
pub enum Event {
    /// A phase of an iteration began.
    Phase {
        /// Iteration.
        iteration: u32,
        /// rollout, train or eval.
        phase: &'static str,
    },
    /// A campaign is about to run (a rollout or an evaluation).
    Campaign {
        /// Iteration.
        iteration: u32,
        /// The campaign.
        id: Uuid,
    },
    /// The update made an optimiser step.
    Step {
        /// Iteration.
        iteration: u32,
        /// Steps done.
        done: usize,
        /// Steps in all.
        total: usize,
        /// That step's loss.
        loss: f64,
    },
    /// An iteration finished.
    Done(Box<IterationView>),
}

/// The run's two policies: sampling for rollouts, greedy for evaluations, both following
/// the run's version link.
pub struct RunPolicies {
    /// Temperature 1.
    pub sample: Arc<Following>,
    /// Greedy.
    pub greedy: Arc<Following>,
}

impl RunPolicies {
    /// Both, for the engine's registry.
    pub fn all(&self) -> [Arc<dyn Policy>; 2] {
        [self.sample.clone(), self.greedy.clone()]
    }
}

/// Where a run keeps its versions and its version link.
pub fn run_dir(root: &Path, run: Uuid) -> PathBuf {
    root.join(run.to_string())
}

/// The names the run's policies are registered under (stable across restarts, so a
/// resumed run's campaigns find them).
pub fn policy_names(run: Uuid) -> (String, String) {
    let short = &run.simple().to_string()[..8];
    (format!("run-{short}-sample"), format!("run-{short}-greedy"))
}

/// Prepares a run's directory, points its version link at the newest version (the base
/// model when none was published yet) and loads its two policies. Register them
/// ([`RunPolicies::all`]) before building the engine that runs it.
pub fn prepare(
    cfg: &RunConfig,
    view: &RunView,
    root: &Path,
    dylib: &Path,
) -> Result<RunPolicies, RunError> {
    let dir = run_dir(root, view.id);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::io(&dir, e))?;
    let current = view
        .version
        .as_ref()
        .map_or(cfg.model.clone(), PathBuf::from);
    let link = dir.join("current");
    promote(&current, &link).map_err(|e| RunError::io(&link, e))?;
    let (sample_name, greedy_name) = policy_names(view.id);
    let limits = BatchLimits {
        max_batch: 8,
        max_wait: Duration::from_millis(10),
    };
    let options = |temperature: f32| {
        let mut o = OnnxOptions::new(&link, dylib);
        o.generation.temperature = temperature;
        o.generation.max_new_tokens = cfg.policy.max_new_tokens as usize;
        o.answer_prefix = cfg.policy.answer_prefix.clone();
        o.constrained = match cfg.policy.constrained.as_deref() {
            Some("reasoned") => Some(Constraint::Reasoned),
            Some(_) => Some(Constraint::Action),
            None => None,
        };
        o
    };
    let follow = |name: &str, t: f32| {
        onnx::following(name, &link, options(t), limits)
            .map(Arc::new)
            .map_err(|e| RunError::Config(format!("model: {e}")))
    };
    Ok(RunPolicies {
        sample: follow(&sample_name, 1.0)?,
        greedy: follow(&greedy_name, 0.0)?,
    })
}

/// Checks what needs the store and the model, before anything runs: the training and
/// held-out tasks exist (and differ), and the trainer can train the model.
pub async fn check(store: &Store, cfg: &RunConfig) -> Result<(), RunError> {
    let train = store.load_tasks(&cfg.train).await?;
    if train.is_empty() {
        return Err(RunError::Config(
            "train: no registered task matches the filter".into(),
        ));
    }
    if let HeldOut::Tasks(f) = &cfg.held_out {
        let held = store.load_tasks(f).await?;
        if held.is_empty() {
            return Err(RunError::Config(
                "held_out.tasks: no registered task matches the filter (a split with no held-out tasks)".into(),
            ));
        }
        let train_ids: std::collections::HashSet<&str> =
            train.iter().map(|t| t.id.as_str()).collect();
        if let Some(t) = held.iter().find(|t| train_ids.contains(t.id.as_str())) {
            return Err(RunError::Config(format!(
                "held_out.tasks: task {} is also a training task (held-out tasks must not be trained on; use \"held_out\": \"seeds\" for the same tasks on other seeds)",
                t.id
            )));
        }
    }
    let model = cfg.model.clone();
    tokio::task::spawn_blocking(move || {
        Trainer::load(&model, TrainConfig::default(), &candle_core::Device::Cpu).map(|_| ())
    })
    .await
    .map_err(|e| RunError::Config(format!("model: {e}")))?
    .map_err(|e| RunError::Config(format!("model: the trainer cannot train it: {e}")))?;
    Ok(())
}

/// Creates a run (after [`check`]).
pub async fn create(store: &Store, cfg: &RunConfig) -> Result<Uuid, RunError> {
    cfg.validate().map_err(RunError::Config)?;
    check(store, cfg).await?;
    let id = Uuid::new_v4();
    let value = serde_json::to_value(cfg).map_err(|e| RunError::Config(e.to_string()))?;
    store.create_run(id, &cfg.name, &value).await?;
    Ok(id)
}

/// Everything an iteration needs.
struct Ctx<'a> {
    engine: &'a Engine,
    policies: &'a RunPolicies,
    cfg: RunConfig,
    run: Uuid,
    dir: PathBuf,
    dylib: PathBuf,
    events: &'a (dyn Fn(Event) + Send + Sync),
}

/// Runs (or resumes) a run to its end.
pub async fn execute(
    engine: &Engine,
    policies: &RunPolicies,
    run: Uuid,
    root: &Path,
    dylib: &Path,
    events: &(dyn Fn(Event) + Send + Sync),
) -> Result<RunView, RunError> {
    let store = engine.store();
    let view = store.get_run(run).await?.ok_or(RunError::NoRun(run))?;
    if matches!(view.state.as_str(), "completed" | "cancelled") {
        return Ok(view);
    }
    let cfg: RunConfig =
        serde_json::from_value(view.config.clone()).map_err(|e| RunError::Config(e.to_string()))?;
    store.set_run_state(run, "running", None).await?;
    let ctx = Ctx {
        engine,
        policies,
        cfg,
        run,
        dir: run_dir(root, run),
        dylib: dylib.to_path_buf(),
        events,
    };
    for idx in 0..=ctx.cfg.iterations {
        if let Err(e) = iteration(&ctx, idx).await {
            // A run cancelled (its campaigns with it) or paused meanwhile stopped as asked.
            if let Some(v) = store.get_run(run).await?
                && matches!(v.state.as_str(), "cancelled" | "paused")
            {
                return Ok(v);
            }
            store
                .set_run_state(run, "failed", Some(&e.to_string()))
                .await?;
            return Err(e);
        }
        if let Some(v) = store.get_run(run).await?
            && v.state != "running"
        {
            return Ok(v);
        }
    }
    store.set_run_state(run, "completed", None).await?;
    store.get_run(run).await?.ok_or(RunError::NoRun(run))
}

/// The version the run is at now.
async fn current_version(ctx: &Ctx<'_>) -> Result<PathBuf, RunError> {
    let v = ctx
        .engine
        .store()
        .get_run(ctx.run)
        .await?
        .ok_or(RunError::NoRun(ctx.run))?;
    Ok(v.version.map_or(ctx.cfg.model.clone(), PathBuf::from))
}

/// Points the link at `version` and waits until `policy` serves it.
async fn serve(ctx: &Ctx<'_>, version: &Path, policy: &Following) -> Result<(), RunError> {
    let link = ctx.dir.join("current");
    promote(version, &link).map_err(|e| RunError::io(&link, e))?;
    policy
        .catch_up()
        .await
        .map_err(|r| RunError::Config(format!("version {}: {}", r.dir.display(), r.why)))?;
    Ok(())
}

async fn iteration(ctx: &Ctx<'_>, idx: u32) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let i = idx as i32;
    let existing = store.run_iterations(ctx.run).await?;
    if existing.iter().any(|it| it.idx == i && it.phase == "done") {
        return Ok(());
    }
    let mut it = if idx == 0 {
        store
            .start_iteration(ctx.run, 0, "eval", &serde_json::json!({}))
            .await?
    } else {
        let tasks: Vec<(String, usize)> = store
            .load_tasks(&ctx.cfg.train)
            .await?
            .iter()
            .map(|t| (t.id.to_string(), t.rubric.fact_count()))
            .collect();
        let horizons = plan::horizons(&ctx.cfg, &tasks, idx, &existing);
        store
            .start_iteration(
                ctx.run,
                i,
                "rollout",
                &serde_json::to_value(&horizons).unwrap_or_default(),
            )
            .await?
    };
    if it.phase == "rollout" {
        if !enter(ctx, idx, "rollout").await? {
            return Ok(());
        }
        rollout(ctx, &it).await?;
        it = reload(store, ctx.run, i).await?;
    }
    if it.phase == "train" {
        if !enter(ctx, idx, "train").await? {
            return Ok(());
        }
        train(ctx, &it, &existing).await?;
        it = reload(store, ctx.run, i).await?;
    }
    if it.phase == "eval" {
        if !enter(ctx, idx, "eval").await? {
            return Ok(());
        }
        evaluate(ctx, &it, &existing).await?;
        it = reload(store, ctx.run, i).await?;
    }
    (ctx.events)(Event::Done(Box::new(it)));
    Ok(())
}

/// Starts `phase` of iteration `idx` unless the run was halted: announces it, and says
/// whether to go on.
async fn enter(ctx: &Ctx<'_>, idx: u32, phase: &'static str) -> Result<bool, RunError> {
    if halted(ctx).await? {
        return Ok(false);
    }
    (ctx.events)(Event::Phase {
        iteration: idx,
        phase,
    });
    Ok(true)
}

/// Whether the run was paused or cancelled (through the API): checked between phases,
/// so a phase is never cut short by a pause.
async fn halted(ctx: &Ctx<'_>) -> Result<bool, RunError> {
    let v = ctx.engine.store().get_run(ctx.run).await?;
    Ok(v.is_some_and(|v| matches!(v.state.as_str(), "paused" | "cancelled")))
}

async fn reload(store: &Store, run: Uuid, i: i32) -> Result<IterationView, RunError> {
    store
        .run_iterations(run)
        .await?
        .into_iter()
        .find(|it| it.idx == i)
        .ok_or(RunError::NoRun(run))
}

async fn run_campaign(ctx: &Ctx<'_>, idx: u32, id: Uuid) -> Result<(), RunError> {
    (ctx.events)(Event::Campaign { iteration: idx, id });
    let status = ctx.engine.run_campaign(id).await?;
    if status != "completed" {
        return Err(RunError::Config(format!(
            "campaign {id} ended {status}, not completed"
        )));
    }
    Ok(())
}

async fn rollout(ctx: &Ctx<'_>, it: &IterationView) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let idx = it.idx as u32;
    let started = Instant::now();
    serve(ctx, &current_version(ctx).await?, &ctx.policies.sample).await?;
    let horizons: BTreeMap<String, u32> =
        serde_json::from_value(it.horizons.clone()).map_err(|e| RunError::Config(e.to_string()))?;
    let mut campaigns = it.rollout_campaigns.clone();
    if campaigns.is_empty() {
        let mut by_horizon: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (task, h) in &horizons {
            by_horizon.entry(*h).or_default().push(task.clone());
        }
        for (h, ids) in by_horizon {
            let spec = CampaignSpec {
                name: Some(format!(
                    "{} · iteration {idx} · rollouts at horizon {h}",
                    ctx.cfg.name
                )),
                policy: Some(policy_names(ctx.run).0),
                tasks: Some(TaskFilter {
                    ids,
                    ..Default::default()
                }),
                rollouts_per_task: Some(ctx.cfg.rollouts_per_task),
                max_steps: Some(h),
                seed: Some(
                    ctx.cfg.seed.wrapping_mul(1_000_003) ^ (u64::from(idx) << 20) ^ u64::from(h),
                ),
                ..Default::default()
            };
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
    store
        .update_iteration(
            ctx.run,
            it.idx,
            IterationUpdate {
                phase: Some("train"),
                train_success: Some(if finished > 0 {
                    successes as f64 / finished as f64
                } else {
                    0.0
                }),
                env_steps: Some(steps),
                rollout_ms: Some(started.elapsed().as_millis() as i64),
                judge_ms: Some(store.judge_ms(&campaigns).await?),
                report: Some(serde_json::json!({ "tasks": tasks })),
                ..Default::default()
            },
        )
        .await?;
    Ok(())
}

async fn train(
    ctx: &Ctx<'_>,
    it: &IterationView,
    before: &[IterationView],
) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let idx = it.idx as u32;
    let started = Instant::now();
    let parent = current_version(ctx).await?;
    let out = ctx.dir.join(format!("v{idx}"));
    let objective = ctx.cfg.objective_at(idx);
    let mut report = it.report.clone().unwrap_or_else(|| serde_json::json!({}));
    let mut update = IterationUpdate {
        phase: Some("eval"),
        parent_version: Some(parent.display().to_string()),
        ..Default::default()
    };
    let published = out.join(training::version::LINEAGE).is_file();
    if published {
        // Published before the process stopped, not recorded: taken as it is.
        update.version = Some(out.display().to_string());
    } else {
        // FBC replays the last four iterations (WebGym's window); GRPO is on-policy.
        let mut campaigns = Vec::new();
        if objective == Objective::Fbc {
            for b in before
                .iter()
                .filter(|b| b.idx > 0 && b.idx + 4 > it.idx && b.idx < it.idx)
            {
                campaigns.extend(b.rollout_campaigns.iter().copied());
            }
        }
        campaigns.extend(it.rollout_campaigns.iter().copied());
        let episodes = traces::from_campaigns(store, &campaigns).await?;
        let mut collected = data::collect(&episodes, false);
        let selection = match objective {
            Objective::Fbc => {
                let mut rng = rand::rngs::StdRng::seed_from_u64(ctx.cfg.seed ^ u64::from(idx));
                select_fbc(&collected.metas, &FbcFilter::default(), &mut rng)
            }
            Objective::Grpo => select_grpo(&collected.metas, ctx.cfg.grpo_k),
        };
        update.dropped = serde_json::to_value(&selection.dropped).ok();
        if selection.kept.is_empty() {
            update.samples = Some(0);
            tracing::info!(iteration = idx, "nothing selected; the version stays");
        } else if let TrainerChoice::External(trainer) = &ctx.cfg.trainer {
            let job = external::Job {
                store,
                trainer,
                run: ctx.run,
                iteration: idx,
                objective: objective.to_string(),
                episodes: &episodes,
                at: &collected.at,
                kept: &selection.kept,
                parent: &parent,
                out: &out,
                work: &external::work_dir(&ctx.dir, idx),
                dylib: &ctx.dylib,
                lineage: serde_json::json!({
                    "run": ctx.run, "iteration": idx, "campaigns": campaigns,
                    "objective": objective.to_string(), "dropped": selection.dropped,
                    "not_trainable": collected.skipped,
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
                external::Outcome::ServedModel { name, .. } => {
                    return Err(RunError::Config(format!(
                        "trainer.returns: the external trainer returned the served model {name:?}, but this run's policy is the ONNX policy"
                    )));
                }
            }
        } else {
            let model = Model::load(&parent, &ctx.dylib, Device::Cpu, 2)
                .map_err(|e| RunError::Config(format!("{}: {e}", parent.display())))?;
            let mut replayer = Replayer::new(model, Blobs::Store(store.clone()));
            let samples = data::samples(
                &mut replayer,
                &episodes,
                &collected.at,
                &selection.kept,
                &mut collected.skipped,
                || {},
            )
            .await;
            let cfg = TrainConfig {
                objective,
                optimizer: AdamWConfig {
                    lr: ctx.cfg.lr,
                    ..AdamWConfig::default()
                },
                micro_batch: ctx.cfg.micro_batch as usize,
                epochs: ctx.cfg.epochs as usize,
                seed: ctx.cfg.seed ^ u64::from(idx),
                ..TrainConfig::default()
            };
            let lineage = serde_json::json!({
                "run": ctx.run, "iteration": idx, "campaigns": campaigns,
                "objective": objective.to_string(), "samples": samples.len(),
                "dropped": selection.dropped, "not_trainable": collected.skipped,
            });
            let (from, to, n) = (parent.clone(), out.clone(), samples.len());
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let job =
                tokio::task::spawn_blocking(move || -> Result<training::UpdateReport, RunError> {
                    let mut trainer = Trainer::load(&from, cfg, &candle_core::Device::Cpu)?;
                    let r = trainer.update(&samples, &mut |done, total, loss| {
                        let _ = tx.send((done, total, loss));
                    })?;
                    let mut lineage = lineage;
                    lineage["report"] = serde_json::to_value(&r).unwrap_or_default();
                    trainer.publish(&to, lineage)?;
                    Ok(r)
                });
            while let Some((done, total, loss)) = rx.recv().await {
                (ctx.events)(Event::Step {
                    iteration: idx,
                    done,
                    total,
                    loss,
                });
            }
            let r = job
                .await
                .map_err(|e| RunError::Config(format!("training thread: {e}")))??;
            update.samples = Some(n as i32);
            update.loss = Some(r.last_loss);
            update.version = Some(out.display().to_string());
            report["update"] = serde_json::json!({
                "first_loss": r.first_loss, "last_loss": r.last_loss, "steps": r.steps,
                "tokens": r.tokens, "samples_per_s": r.samples_per_s, "grpo": r.grpo,
            });
        }
    }
    if let Some(v) = &update.version {
        store.set_run_version(ctx.run, v).await?;
    }
    report["objective"] = objective.to_string().into();
    update.report = Some(report);
    update.train_ms = Some(started.elapsed().as_millis() as i64);
    store.update_iteration(ctx.run, it.idx, update).await?;
    Ok(())
}

async fn evaluate(
    ctx: &Ctx<'_>,
    it: &IterationView,
    before: &[IterationView],
) -> Result<(), RunError> {
    let store = ctx.engine.store();
    let idx = it.idx as u32;
    let started = Instant::now();
    // An update that published nothing leaves the version, and so its evaluation, as is.
    if idx > 0
        && it.version.is_none()
        && let Some(prev) = before
            .iter()
            .rev()
            .find(|b| b.idx < it.idx && b.eval_success.is_some())
    {
        store
            .update_iteration(
                ctx.run,
                it.idx,
                IterationUpdate {
                    phase: Some("done"),
                    eval_success: prev.eval_success,
                    eval_ms: Some(0),
                    ..Default::default()
                },
            )
            .await?;
        return Ok(());
    }
    serve(ctx, &current_version(ctx).await?, &ctx.policies.greedy).await?;
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
    store
        .update_iteration(
            ctx.run,
            it.idx,
            IterationUpdate {
                phase: Some("done"),
                eval_success: Some(v.success_rate.unwrap_or(0.0)),
                eval_ms: Some(started.elapsed().as_millis() as i64),
                ..Default::default()
            },
        )
        .await?;
    Ok(())
}

/// The id of the run's campaign for `purpose`: derived, not drawn, so that a run resumed
/// after a crash between creating a campaign and recording it in its iteration finds that
/// campaign again instead of creating a second one.
pub fn campaign_id(run: Uuid, purpose: &str) -> Uuid {
    Uuid::new_v5(&run, purpose.as_bytes())
}

/// The evaluation campaign of iteration `idx` for `policy`: the same held-out episodes
/// (tasks, seeds, horizon) in every iteration, and for any other policy compared with the
/// run (e.g. `random`).
pub fn eval_spec(cfg: &RunConfig, policy: &str, idx: u32) -> CampaignSpec {
    let tasks = match &cfg.held_out {
        HeldOut::Seeds => cfg.train.clone(),
        HeldOut::Tasks(f) => f.clone(),
    };
    CampaignSpec {
        name: Some(format!(
            "{} · iteration {idx} · held-out evaluation",
            cfg.name
        )),
        policy: Some(policy.to_string()),
        tasks: Some(tasks),
        rollouts_per_task: Some(cfg.eval_rollouts),
        max_steps: Some(cfg.eval_horizon),
        answer_checks: Some(cfg.eval_answer_checks),
        // One seed for every evaluation, never a training seed's.
        seed: Some(EVAL_SEED ^ cfg.seed),
        ..Default::default()
    }
}

/// Seed of every evaluation campaign (xor the run's seed): far from the rollouts', which
/// mix the iteration into the high bits.
const EVAL_SEED: u64 = 0x5EED_E7A1_0000_0001;
