//! `surfgym train run | resume | list | show`: training runs from the command line, with
//! a line per phase, a bar per campaign and one for each update.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::ProgressBar;
use store::{IterationView, Store};
use trainloop::RunConfig;
use trainloop::run::{self, Event};
use uuid::Uuid;

use crate::args::Common;
use crate::setup::{engine_with, environment, finish};
use crate::{db, progress};

/// `surfgym train run`.
#[derive(Args)]
pub struct RunArgs {
    /// The run's configuration (JSON; docs/guides/training.md#training-runs lists the fields).
    config: PathBuf,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    sites_port: u16,
}

/// `surfgym train resume`.
#[derive(Args)]
pub struct ResumeArgs {
    /// The run.
    id: String,
    /// First port of the practice sites (0: any free ports).
    #[arg(long, default_value_t = 8701)]
    sites_port: u16,
}

/// `surfgym train show`.
#[derive(Args)]
pub struct ShowArgs {
    /// The run.
    id: String,
    /// Print the run and its iterations (every recorded figure, the phases' timeline
    /// included) as one JSON object, for scripts and benchmarks.
    #[arg(long)]
    json: bool,
}

/// Creates a run from its config and runs it here.
pub async fn start(common: &Common, a: RunArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.config)
        .with_context(|| format!("reading {}", a.config.display()))?;
    let cfg =
        RunConfig::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.config.display()))?;
    let env = environment(common, a.sites_port).await?;
    let id = trainloop::run::create(&env.db.store, &cfg)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.config.display()))?;
    println!("training run {id}");
    go(common, env, id).await
}

/// Resumes a run where it stopped.
pub async fn resume(common: &Common, a: ResumeArgs) -> anyhow::Result<ExitCode> {
    let id = parse_id(&a.id)?;
    let env = environment(common, a.sites_port).await?;
    // A run created through the API may be in a server's hands: never run it twice.
    if env.db.store.get_run(id).await?.is_some() && !env.db.store.take_run(id).await? {
        finish(env).await?;
        bail!(
            "training run {id} is being executed by a server (`surfgym serve`); pause it there first (POST /api/training-runs/{id}/pause)"
        );
    }
    go(common, env, id).await
}

/// A run's two policies loaded from its version link, an engine that knows them, and where
/// the run keeps its versions (`DATA_DIR/runs`), with ONNX Runtime's library: what
/// `train run`, `train resume` and `bench curriculum` execute a run with.
pub(crate) fn prepared(
    common: &Common,
    env: &crate::setup::Env,
    cfg: &RunConfig,
    view: &store::RunView,
) -> anyhow::Result<(run::RunPolicies, engine::Engine, PathBuf, PathBuf)> {
    // A served run loads no model here (its server does).
    let dylib = match cfg.onnx_model() {
        Some(m) => common.models.onnx_options(common, m.to_path_buf())?.dylib,
        None => PathBuf::new(),
    };
    let root = common.data_dir.join("runs");
    let policies = run::prepare(cfg, view, &root, &dylib)?;
    let engine = engine_with(common, &env.db, policies.all())?;
    Ok((policies, engine, root, dylib))
}

fn parse_id(s: &str) -> anyhow::Result<Uuid> {
    Uuid::parse_str(s).with_context(|| format!("{s}: not a training run id (`surfgym train list`)"))
}

async fn go(common: &Common, env: crate::setup::Env, id: Uuid) -> anyhow::Result<ExitCode> {
    let store = env.db.store.clone();
    let view = store
        .get_run(id)
        .await?
        .with_context(|| format!("no training run {id} (`surfgym train list`)"))?;
    let cfg: RunConfig = serde_json::from_value(view.config.clone())?;
    let (policies, engine, root, dylib) = prepared(common, &env, &cfg, &view)?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let render_store = store.clone();
    let render = tokio::spawn(async move {
        let mut bar: Option<ProgressBar> = None;
        while let Some(e) = rx.recv().await {
            match e {
                Event::Phase { iteration, phase } => println!("iteration {iteration} · {phase}"),
                Event::Campaign { id, .. } => {
                    // The campaign's own bar, fed from the database, until it ends.
                    let _ = progress::watch(&render_store, &[id]).await;
                }
                Event::Step {
                    done, total, loss, ..
                } => {
                    let b = bar.get_or_insert_with(|| {
                        progress::bar(
                            total as u64,
                            "update",
                            18,
                            "{pos}/{len} optimiser steps {msg}",
                        )
                        .unwrap_or_else(|_| ProgressBar::new(total as u64))
                    });
                    b.set_length(total as u64);
                    b.set_position(done as u64);
                    b.set_message(format!("loss {loss:.4}"));
                    if done == total {
                        b.finish_and_clear();
                        bar = None;
                    }
                }
                Event::Done(it) => println!("{}", line(&it)),
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
    finish(env).await?;
    let view = result?;
    println!("training run {id}: {}", view.state);
    print_table(&store, id).await?;
    if let Some(line) = crate::summary::policy_prompts_line() {
        println!("{line}");
    }
    Ok(if view.state == store::Status::Completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A success rate as a percentage, `-` when there is none.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn line(it: &IterationView) -> String {
    format!(
        "iteration {:>2}: train {:>6}  held-out {:>6}  samples {:>4}  loss {:>8}  env steps {:>5}  wall {:>7}",
        it.idx,
        pct(it.train_success),
        pct(it.eval_success),
        it.samples.map_or("-".into(), |s| s.to_string()),
        it.loss.map_or("-".into(), |l| format!("{l:.4}")),
        it.env_steps.map_or("-".into(), |s| s.to_string()),
        it.wall_ms
            .map_or("-".into(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
    )
}

async fn print_table(store: &Store, id: Uuid) -> anyhow::Result<()> {
    for it in store.run_iterations(id).await? {
        println!("{}", line(&it));
    }
    Ok(())
}

/// Lists runs, newest first.
pub async fn list(common: &Common) -> anyhow::Result<ExitCode> {
    let db = db::open(common).await?;
    for r in db.store.list_runs().await? {
        println!(
            "{}  {:<10} {}  {}",
            r.id,
            r.state,
            r.created_at.format("%Y-%m-%d %H:%M"),
            r.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One run's iterations.
pub async fn show(common: &Common, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let id = parse_id(&a.id)?;
    let db = db::open(common).await?;
    let Some(r) = db.store.get_run(id).await? else {
        bail!("no training run {id} (`surfgym train list`)");
    };
    if a.json {
        let iterations = db.store.run_iterations(id).await?;
        println!(
            "{}",
            serde_json::json!({"run": r, "iterations": iterations})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} · {} · {}",
        r.name,
        r.state,
        r.version.as_deref().unwrap_or("base model")
    );
    if let Some(e) = &r.error {
        println!("error: {e}");
    }
    print_table(&db.store, id).await?;
    Ok(ExitCode::SUCCESS)
}
