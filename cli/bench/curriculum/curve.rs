//! One variant's training run, run to its end and read back as a learning curve, and the
//! curves' printed tables.

use std::time::Instant;

use anyhow::Context;
use serde::Serialize;
use trainloop::RunConfig;
use trainloop::run::{self, Event};

use crate::args::Common;
use crate::cmd::train::run::pct;
use crate::progress;
use crate::setup::Env;

/// One point of a learning curve (an iteration's end).
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub iteration: i32,
    pub env_steps: u64,
    pub train_success: Option<f64>,
    pub held_out_success: Option<f64>,
}

/// How a variant ended; written to the curves' JSON as one string, the run's state or
/// `failed: WHY` / `not run: WHY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Its run ended in this state.
    Ran(store::Status),
    /// Its run could not be made or run to its end.
    Failed(String),
    /// It was left out (a warm start whose update selected nothing), and why.
    NotRun(String),
}

impl Ending {
    /// Whether the variant failed: its run could not run, or ran and failed.
    pub fn failed(&self) -> bool {
        matches!(self, Ending::Failed(_) | Ending::Ran(store::Status::Failed))
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Ran(state) => write!(f, "{state}"),
            Ending::Failed(why) => write!(f, "failed: {why}"),
            Ending::NotRun(why) => write!(f, "not run: {why}"),
        }
    }
}

impl Serialize for Ending {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One variant's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    pub variant: String,
    pub run: Option<uuid::Uuid>,
    pub state: Ending,
    pub warm_env_steps: u64,
    pub env_steps: u64,
    pub wall_s: f64,
    pub points: Vec<Point>,
}

/// How a run reports while it goes: progress bars when it runs alone, prefixed lines when
/// variants run side by side (bars from several runs would overwrite each other).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Bars,
    Lines,
}

/// Creates and runs one variant's training run to its end, with a line per phase (and a
/// bar per campaign with `Output::Bars`), and reads its curve back. `offset`: environment
/// steps the variant spent before this run (a warm start's).
pub async fn one_run(
    common: &Common,
    env: &Env,
    name: &str,
    cfg: serde_json::Value,
    offset: u64,
    started: Instant,
    output: Output,
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
    let label = name.to_string();
    let render = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            match e {
                Event::Phase { iteration, phase } => {
                    println!("{label}: iteration {iteration} · {phase}")
                }
                Event::Campaign { id, .. } if output == Output::Bars => {
                    let _ = progress::watch(&render_store, &[id]).await;
                }
                Event::Campaign { .. } | Event::Step { .. } => {}
                Event::Done(it) => println!(
                    "{label}: iteration {:>2}: train {:>6}  held-out {:>6}  env steps {}",
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
        .filter(|it| it.phase == store::Stage::Done)
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
    Ok(Curve {
        variant: name.into(),
        run: Some(id),
        state: Ending::Ran(view.state),
        warm_env_steps: offset,
        env_steps: spent,
        wall_s: started.elapsed().as_secs_f64(),
        points,
    })
}

pub fn print_curve(c: &Curve) {
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

pub fn print_summary(curves: &[Curve], budget: u64, held: &str) {
    println!(
        "\nsummary (budget {budget} environment steps; held out: {held}; a warm start's env steps include its scripted warm-up)"
    );
    println!(
        "{:<16} {:>10} {:>8} {:>10} {:>10} {:>10} {:>9}",
        "variant", "iterations", "start", "at budget", "best", "env steps", "wall"
    );
    for c in curves {
        let held_out: Vec<f64> = c.points.iter().filter_map(|p| p.held_out_success).collect();
        let best = held_out
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        println!(
            "{:<16} {:>10} {:>8} {:>10} {:>10} {:>10} {:>8.0}s",
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

#[cfg(test)]
mod tests {
    use super::Ending;
    use store::Status;

    #[test]
    fn a_variant_failed_when_its_run_could_not_run_or_failed() {
        assert!(Ending::Failed("no model".into()).failed());
        assert!(Ending::Ran(Status::Failed).failed());
        assert!(!Ending::Ran(Status::Completed).failed());
        assert!(!Ending::NotRun("nothing selected".into()).failed());
    }

    #[test]
    fn the_curves_json_keeps_one_string_per_ending() {
        let json = |e: Ending| serde_json::to_value(e).unwrap();
        assert_eq!(json(Ending::Ran(Status::Completed)), "completed");
        assert_eq!(json(Ending::Failed("x".into())), "failed: x");
        assert_eq!(json(Ending::NotRun("y".into())), "not run: y");
    }
}
