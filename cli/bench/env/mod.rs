//! `surfgym bench env`: the cost of an environment step, reset and context, measured on the
//! pool directly (no database, no runner), beside the raw CDP floor on the same pages and
//! against BrowserGym's numbers (`--peer` results files, else the recorded ones).
//!
//! Phases, in one run:
//! 1. latency: one context at a time, BrowserGym's ten MiniWoB++ tasks (the `miniwob-solver`
//!    where it solves the task, the `random` policy with BrowserGym's 10-step horizon where it
//!    does not) and the bundled tasks' reference solutions. A step is `act` (which includes
//!    settling) plus MiniWoB's done check plus `observe`; on the same settled page the floor
//!    is a bare `screenshot` plus `scan_elements` (the two halves of an observation with no
//!    settle and no bookkeeping). A reset is lease → start page → environment start → first
//!    observation.
//! 2. throughput: N contexts each looping MiniWoB episodes for a fixed time; steps/s,
//!    episodes/s, and the browsers' process-tree PSS while the contexts are live.
//!
//! This module holds the options and the order of the run; each phase is a module:
//! `latency`, `throughput`, and `compare` (the verdicts against BrowserGym and the floor).

mod compare;
mod latency;
mod throughput;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use browser_pool::{PoolConfig, PoolScreen, Screen};
use clap::Args;
use engine::SitesServer;
use serde::Serialize;

use self::compare::{Peer, Verdict};
use self::latency::LatencySummary;
use self::throughput::Level;
use super::bench_pool;
use super::episode::{
    Driver, EnvTask, RANDOM_MAX_STEPS, bundled_tasks, miniwob_tasks, practice_sites,
};
use super::procfs::{CpuShare, cpu_cell, loadavg};
use crate::args::Common;

/// BrowserGym's MiniWoB++ screen (its screenshots are 498x321).
const BROWSERGYM_SCREEN: Screen = Screen {
    width: 332,
    height: 214,
    device_scale: 1.5,
    screenshot_scale: 1.0,
};

/// Options of the environment benchmark.
#[derive(Args)]
pub struct EnvArgs {
    /// Concurrency levels of the throughput phase (contexts looping episodes at once).
    // Same id as the global `--contexts`, which then stays out of this command.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub contexts: Vec<usize>,
    /// Seconds each throughput level runs.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Browser processes in the throughput phase; 0: one per `--per-browser` contexts,
    /// rounded up.
    // Same id as the global `--browsers`, which then stays out of this command (its own
    // default, not the global one, applies).
    #[arg(long, default_value_t = 0)]
    pub browsers: usize,
    /// Contexts per browser process when `--browsers` is not given.
    #[arg(long, default_value_t = 8)]
    pub per_browser: usize,
    /// Latency phase: episodes per MiniWoB++ task.
    #[arg(long, default_value_t = 3)]
    pub episodes: usize,
    /// Latency phase: bundled tasks to replay (default: all of them).
    #[arg(long)]
    pub bundled: Option<usize>,
    /// A short smoke run: one episode per task, six bundled tasks, contexts 1,2 for 5 s.
    #[arg(long)]
    pub quick: bool,
    /// BrowserGym's results, `bench_browsergym.py`'s JSON (repeatable: one comparison
    /// per file; default: the figures recorded in its RESULTS.md, 2026-11-22).
    #[arg(long)]
    pub peer: Vec<PathBuf>,
    /// Throughput phase policy: `solver` (the solver where it solves the task, else
    /// random) or `random` on every task (BrowserGym's random agent, about 3 steps an
    /// episode; steps/s depends on steps per episode, since resets weigh heavily).
    #[arg(long, default_value = "solver", value_parser = ["solver", "random"])]
    pub loop_policy: String,
    /// Override the pool's settle quiet window (ms of DOM quiet before an observation).
    #[arg(long)]
    pub settle_quiet_ms: Option<u64>,
    /// Experiment, not isolation: each throughput worker keeps one context for all its
    /// episodes (a reset is then goto + start + observe), to measure what a fresh browser
    /// context per episode costs.
    #[arg(long)]
    pub reuse_contexts: bool,
    /// Extra Chromium switch for the pool, without leading dashes (repeatable).
    #[arg(long = "chromium-arg", value_name = "SWITCH")]
    pub chromium_args: Vec<String>,
    /// Before starting, wait up to this many seconds for the 1-minute load average to
    /// drop under 1 (other work on the machine skews every figure).
    #[arg(long, default_value_t = 0)]
    pub wait_idle: u64,
    /// Base seed of the episodes.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Write every figure as JSON here too.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Everything one run measured, for `--json`.
#[derive(Debug, Serialize)]
struct Report {
    cpus: usize,
    chromium: String,
    chromium_args: Vec<String>,
    settle_quiet_ms: u64,
    screen: Screen,
    loop_policy: String,
    reuse_contexts: bool,
    miniwob_tasks: Vec<String>,
    drivers: BTreeMap<String, Driver>,
    loadavg_at_start: Vec<f64>,
    loadavg_after_latency: Vec<f64>,
    latency_cpu: Option<CpuShare>,
    loadavg_at_end: Vec<f64>,
    cold_first_reset_ms: Option<f64>,
    latency: Vec<LatencySummary>,
    throughput: Vec<Level>,
    peers: Vec<Peer>,
    verdicts: Vec<Verdict>,
}

/// The pool of this benchmark: the bench pool with `--chromium-arg` and
/// `--settle-quiet-ms`.
fn pool_config(common: &Common, args: &EnvArgs) -> anyhow::Result<PoolConfig> {
    let mut cfg = bench_pool(common)?;
    // The pool's own switches already lift screenshot pacing (--disable-frame-rate-limit
    // --disable-gpu-vsync, browser-pool/src/browser/launch.rs); these come on top.
    cfg.extra_args = args.chromium_args.clone();
    if let Some(q) = args.settle_quiet_ms {
        cfg.settle_quiet = Duration::from_millis(q);
    }
    Ok(cfg)
}

/// Runs the benchmark and prints its tables.
pub async fn run(common: &Common, mut args: EnvArgs) -> anyhow::Result<ExitCode> {
    if args.quick {
        args.episodes = 1;
        args.bundled = Some(args.bundled.unwrap_or(6));
        args.contexts = vec![1, 2];
        args.seconds = args.seconds.min(5.0);
    }
    let peers = compare::load_peers(&args.peer)?;
    wait_idle(args.wait_idle).await;
    let loadavg_at_start = loadavg();
    println!("load average at start: {loadavg_at_start:?}");
    // Serves every task's pages until the run ends (it stops when dropped).
    let sites = practice_sites(common).await?;
    let mw = miniwob(&sites)?;
    let bundled = bundled_tasks(sites.bases(), args.bundled);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let base = pool_config(common, &args)?;
    print_setup(common, &args, &base, cpus, &mw, bundled.len(), &peers);

    let latency = latency::measure(common, &args, &mw, &bundled).await?;
    latency::print(&latency);
    let loadavg_after_latency = loadavg();
    println!(
        "load average after the latency phase: {loadavg_after_latency:?}; CPU during it: {}\n",
        cpu_cell(&latency.cpu)
    );

    let levels = throughput::measure(common, &args, &mw, &bundled).await?;
    throughput::print(&levels);

    let verdicts = compare::verdicts(&latency.summaries, &levels, &peers);
    compare::print(&verdicts);

    let loadavg_at_end = loadavg();
    println!("\nload average at the end: {loadavg_at_end:?}");
    if let Some(path) = &args.json {
        let report = Report {
            cpus,
            chromium: common.chromium.display().to_string(),
            chromium_args: args.chromium_args.clone(),
            settle_quiet_ms: base.settle_quiet.as_millis() as u64,
            screen: Screen::of(&base),
            loop_policy: args.loop_policy.clone(),
            reuse_contexts: args.reuse_contexts,
            miniwob_tasks: mw.iter().map(|t| t.name().to_string()).collect(),
            drivers: mw
                .iter()
                .map(|t| (t.name().to_string(), t.driver))
                .collect(),
            loadavg_at_start,
            loadavg_after_latency,
            latency_cpu: latency.cpu,
            loadavg_at_end,
            cold_first_reset_ms: latency.cold_first_reset_ms,
            latency: latency.summaries,
            throughput: levels,
            peers,
            verdicts,
        };
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// With `--wait-idle`: waits, up to that many seconds, for the 1-minute load average to
/// drop under 1.
async fn wait_idle(secs: u64) {
    let waited = Instant::now();
    while secs > 0
        && waited.elapsed() < Duration::from_secs(secs)
        && loadavg().first().is_some_and(|l| *l >= 1.0)
    {
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// BrowserGym's ten MiniWoB++ tasks on the practice sites, none when MiniWoB++ is not
/// installed.
fn miniwob(sites: &SitesServer) -> anyhow::Result<Vec<EnvTask>> {
    Ok(match sites.bases().get("miniwob") {
        Some(base) => miniwob_tasks(base)?,
        None => {
            eprintln!(
                "warning: MiniWoB++ not found (run ./scripts/setup-python.sh or set SURFGYM_MINIWOB_DIR): \
                 MiniWoB rows are skipped and throughput loops the bundled tasks"
            );
            Vec::new()
        }
    })
}

/// The run's header: machine, browser, screen, tasks and where BrowserGym's figures come
/// from.
fn print_setup(
    common: &Common,
    args: &EnvArgs,
    base: &PoolConfig,
    cpus: usize,
    mw: &[EnvTask],
    bundled: usize,
    peers: &[Peer],
) {
    println!(
        "bench env: {cpus} CPUs, {} (extra switches: {:?}), screen {}, settle quiet {} ms, {} MiniWoB++ tasks x {} episodes, {} bundled tasks",
        common.chromium.display(),
        args.chromium_args,
        Screen::of(base).label(),
        base.settle_quiet.as_millis(),
        mw.len(),
        args.episodes,
        bundled
    );
    if !mw.is_empty() {
        let random: Vec<&str> = mw
            .iter()
            .filter(|t| t.driver == Driver::Random)
            .map(EnvTask::name)
            .collect();
        println!(
            "MiniWoB++ tasks (BrowserGym's ten): miniwob-solver on {}, random policy (max {RANDOM_MAX_STEPS} steps, as BrowserGym) on {}",
            mw.len() - random.len(),
            if random.is_empty() {
                "none".to_string()
            } else {
                random.join(", ")
            }
        );
    }
    for peer in peers {
        match &peer.source {
            Some(p) => println!("BrowserGym figures from {p}"),
            None => println!("BrowserGym figures: recorded constants (no --peer file given)"),
        }
    }
    let screen = Screen::of(base);
    if screen != BROWSERGYM_SCREEN {
        let Screen {
            width: w,
            height: h,
            device_scale: scale,
            ..
        } = BROWSERGYM_SCREEN;
        println!(
            "note: BrowserGym renders MiniWoB++ at {w}x{h} with device scale {scale} (so do surfgym's campaigns: the tasks carry that screen); this bench renders every task at its one screen: pass --viewport {w}x{h} --device-scale {scale} to compare on the same screen"
        );
    }
}
