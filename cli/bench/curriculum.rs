//! `surfgym bench curriculum`: TTI's comparison at equal environment steps. Runs, one
//! after another on the same database and sites, training runs that differ only in their
//! horizon schedule (fixed short, fixed long, TTI's, optionally adaptive) and a warm start
//! (one filtered-BC update on scripted-solver or reference traces, then TTI), each with
//! the same `max_env_steps`, tasks, seeds and held-out evaluation episodes, and prints
//! their learning curves against cumulative environment steps.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Parser, ValueEnum};
use engine::CampaignSpec;
use engine::policy::miniwob::SOLVED;
use engine::store::{Store, TaskFilter};
use serde::Serialize;
use trainloop::RunConfig;
use trainloop::run::{self, Event};

use crate::args::Common;
use crate::cmd::train::step::{StepArgs, step};
use crate::progress;
use crate::setup::{Env, engine_with, environment, finish};

/// Which tasks.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    /// The MiniWoB++ tasks the `miniwob-solver` policy covers; held out: other seeds.
    Miniwob,
    /// The bundled sites' `split=train` tasks; held out: their `split=test` tasks.
    Bundled,
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
    /// Also run the adaptive per-task schedule (from `short` to `long` by 10).
    #[arg(long)]
    adaptive: bool,
    /// Write the curves here (JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 0)]
    sites_port: u16,
}

/// One point of a learning curve (an iteration's end).
#[derive(Debug, Clone, Serialize)]
struct Point {
    iteration: i32,
    env_steps: u64,
    train_success: Option<f64>,
    held_out_success: Option<f64>,
}

/// One variant's outcome.
#[derive(Debug, Clone, Serialize)]
struct Curve {
    variant: String,
    run: Option<uuid::Uuid>,
    state: String,
    warm_env_steps: u64,
    env_steps: u64,
    wall_s: f64,
    points: Vec<Point>,
}

/// Runs the benchmark.
pub async fn run(common: &Common, a: CurriculumArgs) -> anyhow::Result<ExitCode> {
    if a.budget_steps == 0 {
        bail!("--budget-steps: must be at least 1");
    }
    if a.tasks == Some(0) {
        bail!("--tasks: must be at least 1 (leave it out for the whole suite)");
    }
    if a.rollouts_per_task < 2 {
        bail!("--rollouts-per-task: must be at least 2 (a group compares rollouts)");
    }
    if a.eval_rollouts == 0
        || a.iterations == 0
        || a.short == 0
        || a.long == 0
        || a.warm_epochs == 0
    {
        bail!(
            "--eval-rollouts, --iterations, --short, --long and --warm-epochs: must be at least 1"
        );
    }
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
    let result = variants(common, &env, &a, &model).await;
    finish(env).await?;
    let (curves, held) = result?;
    print_summary(&curves, a.budget_steps, &held);
    if let Some(out) = &a.out {
        let doc = serde_json::json!({
            "suite": match a.suite { Suite::Miniwob => "miniwob", Suite::Bundled => "bundled" },
            "held_out": held,
            "budget_steps": a.budget_steps,
            "rollouts_per_task": a.rollouts_per_task,
            "eval_rollouts": a.eval_rollouts,
            "seed": a.seed,
            "model": model,
            "variants": curves,
        });
        std::fs::write(out, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("--out {}", out.display()))?;
        println!("curves written to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
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
) -> anyhow::Result<(Vec<Curve>, String)> {
    let store = env.db.store.clone();
    let (train, held_out, held_word) = suite(&store, a).await?;
    println!(
        "{} training tasks; held out: {held_word}; budget {} environment steps per variant",
        train.len(),
        a.budget_steps
    );
    let base = |name: &str, curriculum: serde_json::Value| {
        serde_json::json!({
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
        })
    };
    let mut plan = vec![
        (
            "fixed-short",
            base(
                "fixed-short",
                serde_json::json!({"kind": "fixed", "horizon": a.short}),
            ),
        ),
        (
            "fixed-long",
            base(
                "fixed-long",
                serde_json::json!({"kind": "fixed", "horizon": a.long}),
            ),
        ),
        ("tti", base("tti", serde_json::json!({"kind": "tti"}))),
    ];
    if a.adaptive {
        let c = serde_json::json!({"kind": "adaptive", "start": a.short, "step": 10, "min": a.short, "max": a.long.max(a.short)});
        plan.push(("adaptive", base("adaptive", c)));
    }
    let mut curves = Vec::new();
    for (name, cfg) in plan {
        println!("\n== {name}");
        curves.push(one_run(common, env, name, cfg, 0, Instant::now()).await?);
    }

    // The warm start: the teacher's episodes on the training tasks, each step recorded as
    // the base model would have written it, then one FBC update on them.
    println!("\n== warm+tti");
    let started = Instant::now();
    let teacher = match a.suite {
        Suite::Miniwob => "miniwob-solver",
        Suite::Bundled => "scripted",
    };
    let policy = format!("demonstrated-{teacher}");
    let tti = RunConfig::parse(&base("warm+tti", serde_json::json!({"kind": "tti"})).to_string())
        .map_err(|e| anyhow::anyhow!("warm+tti: {e}"))?;
    let dylib = common
        .models
        .onnx_options(common, model.to_path_buf())?
        .dylib;
    let teacher_policy = engine::policy::PolicyRegistry::builtin()
        .get(teacher)
        .with_context(|| format!("no built-in policy {teacher}"))?;
    let demo = run::demonstrator(&tti, &policy, teacher_policy, &dylib)?;
    let demo_engine = engine_with(common, &env.db, vec![demo])?;
    let spec = CampaignSpec {
        name: Some(format!("bench curriculum · warm start ({policy})")),
        policy: Some(policy.clone()),
        tasks: Some(TaskFilter {
            ids: train.clone(),
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
    let _ = progress::watch(&store, &[campaign]).await;
    let status = watch.await??;
    demo_engine.shutdown().await;
    let v = store
        .get_campaign(campaign)
        .await?
        .context("the warm-start campaign vanished")?;
    let warm_steps = v.steps.max(0) as u64;
    println!(
        "warm start: {policy} campaign {campaign} {status}: {}/{} episodes succeeded, {warm_steps} environment steps (counted toward this variant's budget)",
        v.successes, v.counts.finished
    );
    let out = common
        .data_dir
        .join("runs")
        .join(format!("bench-warm-{campaign}"));
    #[derive(Parser)]
    struct StepCli {
        #[command(flatten)]
        a: StepArgs,
    }
    let argv = [
        "step".to_string(),
        "--campaign".into(),
        campaign.to_string(),
        "--model".into(),
        model.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--objective".into(),
        "fbc".into(),
        "--seed".into(),
        a.seed.to_string(),
        "--epochs".into(),
        a.warm_epochs.to_string(),
    ];
    let step_args = StepCli::try_parse_from(argv)?.a;
    // A teacher whose actions the model cannot write (or a warm-up that failed every
    // episode) selects nothing: the variant is then reported as not run rather than
    // ending the benchmark.
    if let Err(e) = step(common, step_args).await {
        println!("warm+tti not run: the warm start's FBC update failed: {e:#}");
        curves.push(Curve {
            variant: "warm+tti".into(),
            run: None,
            state: format!("not run: {e:#}"),
            warm_env_steps: warm_steps,
            env_steps: warm_steps,
            wall_s: started.elapsed().as_secs_f64(),
            points: Vec::new(),
        });
        return Ok((curves, held_word));
    }
    let left = a.budget_steps.saturating_sub(warm_steps);
    if left == 0 {
        println!("the warm start used the whole budget: no RL iteration for warm+tti");
        let mut c = evaluate_only(
            common,
            env,
            base("warm+tti", serde_json::json!({"kind": "tti"})),
            &out,
            warm_steps,
            started,
        )
        .await?;
        c.variant = "warm+tti".into();
        curves.push(c);
    } else {
        let mut cfg = base("warm+tti", serde_json::json!({"kind": "tti"}));
        cfg["model"] = serde_json::json!(out);
        cfg["max_env_steps"] = serde_json::json!(left);
        curves.push(one_run(common, env, "warm+tti", cfg, warm_steps, started).await?);
    }
    Ok((curves, held_word))
}

/// A warm start that spent the budget: its version's iteration 0 only (one iteration
/// with a budget of 1 step would still roll out; this evaluates and stops).
async fn evaluate_only(
    common: &Common,
    env: &Env,
    mut cfg: serde_json::Value,
    version: &std::path::Path,
    warm: u64,
    started: Instant,
) -> anyhow::Result<Curve> {
    cfg["model"] = serde_json::json!(version);
    cfg["max_env_steps"] = serde_json::json!(1);
    cfg["iterations"] = serde_json::json!(1);
    let mut c = one_run(common, env, "warm+tti", cfg, warm, started).await?;
    c.points.retain(|p| p.iteration == 0);
    Ok(c)
}

/// Creates and runs one variant's training run to its end, with a line per phase and a
/// bar per campaign, and reads its curve back.
async fn one_run(
    common: &Common,
    env: &Env,
    name: &str,
    cfg: serde_json::Value,
    offset: u64,
    started: Instant,
) -> anyhow::Result<Curve> {
    let cfg = RunConfig::parse(&cfg.to_string()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let store = env.db.store.clone();
    let id = run::create(&store, &cfg)
        .await
        .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    println!("training run {id} ({name})");
    let view = store.get_run(id).await?.context("the run vanished")?;
    let (policies, engine, root, dylib) =
        crate::cmd::train::run::prepared(common, env, &cfg, &view)?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let render_store = store.clone();
    let render = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            match e {
                Event::Phase { iteration, phase } => println!("iteration {iteration} · {phase}"),
                Event::Campaign { id, .. } => {
                    let _ = progress::watch(&render_store, &[id]).await;
                }
                Event::Step { .. } => {}
                Event::Done(it) => println!(
                    "iteration {:>2}: train {:>6}  held-out {:>6}  env steps {}",
                    it.idx,
                    pct(it.train_success),
                    pct(it.eval_success),
                    it.env_steps.map_or("-".into(), |s| s.to_string())
                ),
            }
        }
    });
    let events = move |e: Event| {
        let _ = tx.send(e);
    };
    let result = run::execute(&engine, &policies, id, &root, &dylib, &events).await;
    drop(events);
    let _ = render.await;
    engine.shutdown().await;
    let view = result?;
    let mut its = store.run_iterations(id).await?;
    its.sort_by_key(|it| it.idx);
    let mut spent = offset;
    let points = its
        .iter()
        .filter(|it| it.phase == "done")
        .map(|it| {
            spent += it.env_steps.unwrap_or(0).max(0) as u64;
            Point {
                iteration: it.idx,
                env_steps: spent,
                train_success: it.train_success,
                held_out_success: it.eval_success,
            }
        })
        .collect::<Vec<_>>();
    let curve = Curve {
        variant: name.into(),
        run: Some(id),
        state: view.state,
        warm_env_steps: offset,
        env_steps: spent,
        wall_s: started.elapsed().as_secs_f64(),
        points,
    };
    print_curve(&curve);
    Ok(curve)
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn print_curve(c: &Curve) {
    println!("{} ({}): learning curve", c.variant, c.state);
    println!(
        "  {:>9} {:>10} {:>8} {:>9}",
        "iteration", "env steps", "train", "held-out"
    );
    for p in &c.points {
        println!(
            "  {:>9} {:>10} {:>8} {:>9}",
            p.iteration,
            p.env_steps,
            pct(p.train_success),
            pct(p.held_out_success)
        );
    }
}

fn print_summary(curves: &[Curve], budget: u64, held: &str) {
    println!(
        "\nsummary (budget {budget} environment steps; held out: {held}; warm+tti's env steps include its scripted warm-up)"
    );
    println!(
        "{:<12} {:>10} {:>8} {:>10} {:>10} {:>10} {:>9}",
        "variant", "iterations", "start", "at budget", "best", "env steps", "wall"
    );
    for c in curves {
        let held_out: Vec<f64> = c.points.iter().filter_map(|p| p.held_out_success).collect();
        let best = held_out
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        println!(
            "{:<12} {:>10} {:>8} {:>10} {:>10} {:>10} {:>8.0}s",
            c.variant,
            c.points.last().map_or(0, |p| p.iteration),
            pct(held_out.first().copied()),
            pct(held_out.last().copied()),
            pct(best),
            c.env_steps,
            c.wall_s
        );
    }
}
