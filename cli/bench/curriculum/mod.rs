//! `surfgym bench curriculum`: TTI's comparison at equal environment steps. Runs training
//! runs that differ only in their horizon schedule (fixed short, fixed long, TTI's, TTI's
//! stages scaled to the suite's horizons, adaptive) and a warm start (one filtered-BC
//! update on scripted-solver or reference traces, then RL), each with the same
//! `max_env_steps`, tasks, seeds, devices and held-out evaluation episodes, one after
//! another or side by side (`--parallel`, for many-core machines), on the same database and
//! sites, and prints their learning curves against cumulative environment steps.

mod curve;
mod warm;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use futures::future::{FutureExt, LocalBoxFuture, join_all};
use policy::miniwob::SOLVED;
use store::{Store, TaskFilter};
use trainloop::RunConfig;
use trainloop::devices::Devices;

use crate::args::Common;
use crate::setup::{Env, environment, finish};
use curve::{Curve, Output, one_run, print_curve, print_summary};

/// Which tasks.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// The MiniWoB++ tasks the `miniwob-solver` policy covers; held out: other seeds.
    Miniwob,
    /// The bundled sites' `split=train` tasks; held out: their `split=test` tasks.
    Bundled,
}

/// A horizon schedule to compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// `--short` steps in every iteration.
    FixedShort,
    /// `--long` steps in every iteration.
    FixedLong,
    /// TTI as published: online filtered behaviour cloning over a replay buffer of every
    /// earlier iteration's successes, with its stages: 10 in iteration 1, 20 in 2-3, 30
    /// from 4.
    Tti,
    /// TTI's algorithm with its stage shape on this suite's horizons: `--short` in
    /// iteration 1, halfway to `--long` in 2-3, `--long` from 4.
    TtiScaled,
    /// GRPO with TTI's published stages (the schedule without TTI's algorithm).
    GrpoTti,
    /// GRPO with the suite-scaled TTI stages.
    GrpoTtiScaled,
    /// Per task, from `--short` to `--long` by `--adaptive-step`.
    Adaptive,
    /// The warm start, then the `--warm-then` variant's run (its schedule and algorithm:
    /// `tti` clones, `grpo-tti` runs GRPO).
    Warm,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Self::FixedShort => "fixed-short",
            Self::FixedLong => "fixed-long",
            Self::Tti => "tti",
            Self::TtiScaled => "tti-scaled",
            Self::GrpoTti => "grpo-tti",
            Self::GrpoTtiScaled => "grpo-tti-scaled",
            Self::Adaptive => "adaptive",
            Self::Warm => "warm",
        }
    }

    /// The run config's `curriculum`; `None` for the warm start (it takes `--warm-then`'s).
    fn curriculum(self, a: &CurriculumArgs) -> Option<serde_json::Value> {
        let mid = a.short + a.long.saturating_sub(a.short) / 2;
        Some(match self {
            Self::FixedShort => serde_json::json!({"kind": "fixed", "horizon": a.short}),
            Self::FixedLong => serde_json::json!({"kind": "fixed", "horizon": a.long}),
            Self::Tti | Self::GrpoTti => serde_json::json!({"kind": "tti"}),
            Self::TtiScaled | Self::GrpoTtiScaled => {
                serde_json::json!({"kind": "stepwise", "stages": [
                {"from": 1, "horizon": a.short}, {"from": 2, "horizon": mid},
                {"from": 4, "horizon": a.long}]})
            }
            Self::Adaptive => serde_json::json!({"kind": "adaptive", "start": a.short,
                "step": a.adaptive_step, "min": a.short, "max": a.long.max(a.short)}),
            Self::Warm => return None,
        })
    }

    /// Whether it runs TTI's algorithm (filtered behaviour cloning over every earlier
    /// iteration's rollouts) rather than GRPO.
    fn is_tti(self) -> bool {
        matches!(self, Self::Tti | Self::TtiScaled)
    }
}

/// `surfgym bench curriculum`.
#[derive(Args)]
pub struct CurriculumArgs {
    /// The tasks.
    #[arg(long, value_enum, default_value = "miniwob")]
    suite: Suite,
    /// Only the first N training tasks of the suite (default: all).
    #[arg(long)]
    tasks: Option<usize>,
    /// Only these training tasks of the suite (repeat; default: all). With `--tasks`, the
    /// first N of them.
    #[arg(long = "task", value_name = "ID")]
    only: Vec<String>,
    /// The schedules to compare, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "fixed-short,fixed-long,tti,warm"
    )]
    variants: Vec<Variant>,
    /// Also run the adaptive per-task schedule (the same as adding `adaptive` to `--variants`).
    #[arg(long)]
    adaptive: bool,
    /// The adaptive schedule's change of horizon per adjustment.
    #[arg(long, default_value_t = 10)]
    adaptive_step: u32,
    /// The variant the warm start's run follows (its schedule and algorithm).
    #[arg(long, value_enum, default_value = "tti")]
    warm_then: Variant,
    /// Passes of the warm start's behaviour-cloning update over its demonstrations.
    #[arg(long, default_value_t = 4)]
    warm_epochs: usize,
    /// Environment steps every variant may take (its runs' `max_env_steps`; a warm
    /// start's scripted episodes count toward it).
    #[arg(long)]
    budget_steps: u64,
    /// Rollouts per task per iteration (and the warm start's episodes per task).
    #[arg(long, default_value_t = 4)]
    rollouts_per_task: u32,
    /// Samples of each task instance in a GRPO variant's rollout (a run config's
    /// `group_size`; default: the run default, 8 or fewer). TTI's filtered cloning keeps
    /// one sample of each of `--rollouts-per-task` seeds whatever this says.
    #[arg(long)]
    group_size: Option<u32>,
    /// Run-config fields every variant's run takes, as a JSON object, e.g.
    /// '{"policy": {"actions": ["click"], "elements": "label_first"}, "regularization":
    /// {"entropy": 0.01}, "accumulation": 12}'. The fields the benchmark sets itself (the
    /// variants' schedules and objectives, the tasks, budget, seeds and the options above)
    /// are refused.
    #[arg(long, value_name = "JSON")]
    settings: Option<String>,
    /// `--settings`, checked.
    #[arg(skip)]
    settings_map: serde_json::Map<String, serde_json::Value>,
    /// Held-out evaluation episodes per task.
    #[arg(long, default_value_t = 4)]
    eval_rollouts: u32,
    /// Most iterations per run (the budget usually ends it first).
    #[arg(long, default_value_t = 20)]
    iterations: u32,
    /// Seed of every run (the same rollouts' and evaluations' seeds in every variant).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The model to start from (default: the tiny-text model the tests use).
    #[arg(long)]
    model: Option<PathBuf>,
    /// `fixed-short`'s horizon (TTI's first stage).
    #[arg(long, default_value_t = 10)]
    short: u32,
    /// `fixed-long`'s horizon (TTI's last stage) and the evaluation's.
    #[arg(long, default_value_t = 30)]
    long: u32,
    /// Every run's learning rate (default: a run config's, 1e-3, set for the tiny model; a
    /// pretrained model such as SmolLM2-135M wants about 1e-5).
    #[arg(long)]
    lr: Option<f64>,
    /// Where every run computes, as a run config's `devices`, e.g.
    /// '{"policy_threads": 4, "train": "cuda", "precision": "bf16"}' (default: the CPU).
    #[arg(long, value_name = "JSON")]
    devices: Option<String>,
    /// Run the variants side by side rather than one after another (for machines with
    /// cores to spare; each run holds its own policies and browsers). Progress comes as
    /// lines prefixed by the variant rather than bars.
    #[arg(long)]
    parallel: bool,
    /// Write the curves here (JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 0)]
    sites_port: u16,
}

impl CurriculumArgs {
    /// Checks what needs no database, naming the bad option.
    fn validate(&mut self) -> anyhow::Result<Option<Devices>> {
        if self.budget_steps == 0 {
            bail!("--budget-steps: must be at least 1");
        }
        if self.tasks == Some(0) {
            bail!("--tasks: must be at least 1 (leave it out for the whole suite)");
        }
        if self.rollouts_per_task < 2 {
            bail!("--rollouts-per-task: must be at least 2 (a group compares rollouts)");
        }
        if let Some(k) = self.group_size
            && !trainloop::config::group_fits(k, self.rollouts_per_task)
        {
            bail!(
                "--group-size: must be at least 1 and divide --rollouts-per-task ({})",
                self.rollouts_per_task
            );
        }
        if self.eval_rollouts == 0
            || self.iterations == 0
            || self.short == 0
            || self.long == 0
            || self.warm_epochs == 0
            || self.adaptive_step == 0
        {
            bail!(
                "--eval-rollouts, --iterations, --short, --long, --warm-epochs and --adaptive-step: must be at least 1"
            );
        }
        if self.lr.is_some_and(|lr| !(lr > 0.0 && lr.is_finite())) {
            bail!("--lr: must be a positive number");
        }
        if self.warm_then == Variant::Warm {
            bail!(
                "--warm-then: a schedule (fixed-short, fixed-long, tti, tti-scaled or adaptive), not warm"
            );
        }
        if self.adaptive && !self.variants.contains(&Variant::Adaptive) {
            self.variants.push(Variant::Adaptive);
        }
        let mut seen = Vec::new();
        self.variants.retain(|v| {
            let new = !seen.contains(v);
            seen.push(*v);
            new
        });
        if let Some(json) = &self.settings {
            self.settings_map = checked_settings(json)?;
        }
        let Some(json) = &self.devices else {
            return Ok(None);
        };
        let d: Devices = serde_json::from_str(json)
            .map_err(|e| anyhow::anyhow!("--devices: {e} (a run config's `devices` object)"))?;
        d.validate()
            .map_err(|e| anyhow::anyhow!("--devices: {e}"))?;
        Ok(Some(d))
    }
}

/// Run-config fields the benchmark sets itself: what the variants differ in, and what they
/// must share for the comparison to hold.
const OWN_FIELDS: [&str; 18] = [
    "name",
    "model",
    "train",
    "held_out",
    "iterations",
    "rollouts_per_task",
    "group_size",
    "curriculum",
    "eval_horizon",
    "eval_rollouts",
    "seed",
    "max_env_steps",
    "devices",
    "lr",
    "objective",
    "replay_iterations",
    "fbc_iterations",
    "demonstrator",
];

/// `--settings` as an object of run-config fields none of [`OWN_FIELDS`], each valid as a
/// run config takes it (checked on a small config before anything starts).
fn checked_settings(json: &str) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let map = match serde_json::from_str(json) {
        Ok(serde_json::Value::Object(m)) => m,
        Ok(_) => bail!("--settings: must be a JSON object of run-config fields"),
        Err(e) => bail!("--settings: {e} (a JSON object of run-config fields)"),
    };
    if let Some(k) = map.keys().find(|k| OWN_FIELDS.contains(&k.as_str())) {
        bail!("--settings: {k} is set by the benchmark (see its own options)");
    }
    let mut probe = serde_json::json!({
        "name": "settings", "model": "m", "train": {"ids": ["t"]}, "held_out": "seeds",
        "iterations": 1, "curriculum": {"kind": "fixed", "horizon": 1}, "eval_horizon": 1
    });
    for (k, v) in &map {
        probe[k] = v.clone();
    }
    RunConfig::parse(&probe.to_string()).map_err(|e| anyhow::anyhow!("--settings: {e}"))?;
    Ok(map)
}

/// Runs the benchmark.
pub async fn run(common: &Common, mut a: CurriculumArgs) -> anyhow::Result<ExitCode> {
    let devices = a.validate()?;
    let model = a
        .model
        .clone()
        .unwrap_or_else(|| common.data_dir.join("models/tiny-text"));
    if !model.is_dir() {
        bail!(
            "--model {}: no such model directory (./scripts/setup-python.sh makes tiny-text)",
            model.display()
        );
    }
    let env = environment(common, a.sites_port).await?;
    let result = variants(common, &env, &a, &model, devices.as_ref()).await;
    finish(env).await?;
    let (curves, held) = result?;
    print_summary(&curves, a.budget_steps, &held);
    if let Some(out) = &a.out {
        let doc = serde_json::json!({
            "suite": match a.suite { Suite::Miniwob => "miniwob", Suite::Bundled => "bundled" },
            "held_out": held,
            "budget_steps": a.budget_steps,
            "rollouts_per_task": a.rollouts_per_task,
            "group_size": a.group_size,
            "settings": a.settings_map,
            "eval_rollouts": a.eval_rollouts,
            "short": a.short,
            "long": a.long,
            "seed": a.seed,
            "lr": a.lr,
            "model": model,
            "devices": devices,
            "parallel": a.parallel,
            "variants": curves,
        });
        std::fs::write(out, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("--out {}", out.display()))?;
        println!("curves written to {}", out.display());
    }
    let failures = curves.iter().filter(|c| c.state.failed()).count();
    if failures > 0 {
        eprintln!("{failures} of {} variants failed (see above)", curves.len());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// A variant whose run could not be made or run to its end.
fn failed(name: &str, e: &anyhow::Error, started: Instant) -> Curve {
    println!("{name} failed: {e:#}");
    Curve {
        variant: name.into(),
        run: None,
        state: curve::Ending::Failed(format!("{e:#}")),
        warm_env_steps: 0,
        env_steps: 0,
        wall_s: started.elapsed().as_secs_f64(),
        points: Vec::new(),
    }
}

/// The training tasks and the run's `held_out`, and a word on what is held out.
async fn suite(
    store: &Store,
    a: &CurriculumArgs,
) -> anyhow::Result<(Vec<String>, serde_json::Value, String)> {
    match a.suite {
        Suite::Miniwob => {
            let wanted: Vec<String> = SOLVED.iter().map(|n| format!("miniwob.{n}")).collect();
            let have = store
                .load_tasks(&TaskFilter {
                    ids: wanted.clone(),
                    ..Default::default()
                })
                .await?;
            let mut ids: Vec<String> = wanted
                .into_iter()
                .filter(|id| have.iter().any(|t| t.id.as_str() == id))
                .collect();
            if ids.is_empty() {
                bail!(
                    "--suite miniwob: no MiniWoB++ task is registered (./scripts/setup-python.sh installs MiniWoB++)"
                );
            }
            keep_only(&mut ids, &a.only)?;
            ids.truncate(a.tasks.unwrap_or(usize::MAX));
            Ok((
                ids,
                serde_json::json!("seeds"),
                "the same tasks on held-out seeds".into(),
            ))
        }
        Suite::Bundled => {
            let split = |s: &str| TaskFilter {
                split: Some(s.into()),
                ..Default::default()
            };
            let bundled = |ts: Vec<tasks::Task>| -> Vec<String> {
                ts.into_iter()
                    .filter(|t| t.site != "miniwob")
                    .map(|t| t.id.as_str().to_string())
                    .collect()
            };
            let mut train = bundled(store.load_tasks(&split("train")).await?);
            let test = bundled(store.load_tasks(&split("test")).await?);
            if train.is_empty() || test.is_empty() {
                bail!("--suite bundled: no bundled task in the train or the test split");
            }
            keep_only(&mut train, &a.only)?;
            train.truncate(a.tasks.unwrap_or(usize::MAX));
            let n = test.len();
            Ok((
                train,
                serde_json::json!({"tasks": {"ids": test}}),
                format!("the {n} bundled split=test tasks (other tasks, never trained on)"),
            ))
        }
    }
}

/// `--task`: the suite's training tasks named there, every one of them a training task.
fn keep_only(ids: &mut Vec<String>, only: &[String]) -> anyhow::Result<()> {
    if only.is_empty() {
        return Ok(());
    }
    if let Some(t) = only.iter().find(|t| !ids.contains(t)) {
        bail!("--task {t}: not a training task of this suite (see `surfgym tasks list`)");
    }
    ids.retain(|id| only.contains(id));
    Ok(())
}

async fn variants(
    common: &Common,
    env: &Env,
    a: &CurriculumArgs,
    model: &std::path::Path,
    devices: Option<&Devices>,
) -> anyhow::Result<(Vec<Curve>, String)> {
    let store = env.db.store.clone();
    let (train, held_out, held_word) = suite(&store, a).await?;
    println!(
        "{} training tasks; held out: {held_word}; budget {} environment steps per variant",
        train.len(),
        a.budget_steps
    );
    // The run config of `schedule`'s run, named `name`: TTI's algorithm (filtered cloning
    // over a buffer of every iteration's successes) for the TTI schedules, GRPO otherwise.
    let base = |name: &str, schedule: Variant| -> anyhow::Result<serde_json::Value> {
        let curriculum = schedule
            .curriculum(a)
            .with_context(|| format!("{name}: a warm start cannot follow a warm start"))?;
        let mut cfg = serde_json::json!({
            "name": format!("bench curriculum · {name}"),
            "model": model,
            "train": {"ids": train},
            "held_out": held_out,
            "iterations": a.iterations,
            "rollouts_per_task": a.rollouts_per_task,
            "curriculum": curriculum,
            "eval_horizon": a.long,
            "eval_rollouts": a.eval_rollouts,
            "seed": a.seed,
            "max_env_steps": a.budget_steps,
        });
        if let Some(d) = devices {
            cfg["devices"] = serde_json::json!(d);
        }
        if let Some(lr) = a.lr {
            cfg["lr"] = serde_json::json!(lr);
        }
        if schedule.is_tti() {
            cfg["objective"] = "fbc".into();
            // A buffer that keeps every iteration's successes: TTI's, not WebGym's window
            // of the last four.
            cfg["replay_iterations"] = a.iterations.into();
        } else if let Some(k) = a.group_size {
            // GRPO's groups only: cloning keeps its one sample per seed (more instances
            // rather than repeats of one).
            cfg["group_size"] = k.into();
        }
        for (k, v) in &a.settings_map {
            cfg[k] = v.clone();
        }
        Ok(cfg)
    };
    let output = if a.parallel {
        Output::Lines
    } else {
        Output::Bars
    };
    // A variant that fails is reported as failed rather than taking the others' curves
    // with it (side by side, they may have finished).
    let mut runs: Vec<LocalBoxFuture<'_, Curve>> = Vec::new();
    for &v in &a.variants {
        let run = if v == Variant::Warm {
            let then = a.warm_then;
            let name = format!("warm+{}", then.name());
            let cfg = base(&name, then).context("--warm-then")?;
            let train = &train;
            async move {
                let started = Instant::now();
                warm::run(common, env, a, train, cfg, &name, output)
                    .await
                    .unwrap_or_else(|e| failed(&name, &e, started))
            }
            .boxed_local()
        } else {
            let cfg = base(v.name(), v)?;
            async move {
                let started = Instant::now();
                one_run(common, env, v.name(), cfg, 0, started, output)
                    .await
                    .unwrap_or_else(|e| failed(v.name(), &e, started))
            }
            .boxed_local()
        };
        runs.push(run);
    }
    let mut curves = Vec::new();
    if a.parallel {
        println!("running {} variants side by side", runs.len());
        for c in join_all(runs).await {
            print_curve(&c);
            curves.push(c);
        }
    } else {
        for (run, v) in runs.into_iter().zip(&a.variants) {
            println!("\n== {}", v.name());
            let c = run.await;
            print_curve(&c);
            curves.push(c);
        }
    }
    Ok((curves, held_word))
}
