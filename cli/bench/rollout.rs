//! `surfgym bench rollout`: the same episodes (bundled tasks of uneven length, identical
//! seeds, identical simulated policy latencies and outcomes) scheduled `async` and
//! `lockstep`, at several concurrency levels, in one run.

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use engine::RunnerConfig;
use engine::SitesServer;
use engine::{CampaignSpec, Engine};
use policy::{LatencyModel, PolicyRegistry};
use serde::Serialize;

use super::stats::steady_per_hour;
use crate::args::Common;
use crate::db;

/// Options of the rollout benchmark.
#[derive(Args)]
pub struct RolloutArgs {
    /// Concurrent episodes to measure at.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32")]
    pub concurrency: Vec<usize>,
    /// Median simulated policy latency, ms.
    #[arg(long, default_value_t = 600)]
    pub latency_ms: u64,
    /// Log-space spread of the latency (heavy tail).
    #[arg(long, default_value_t = 0.7)]
    pub sigma: f64,
    /// Episodes per level, as a multiple of the concurrency (rounded up to whole passes
    /// over the bundled tasks).
    #[arg(long, default_value_t = 2.5)]
    pub episodes_per_slot: f64,
    /// Browser contexts per browser process.
    #[arg(long, default_value_t = 8)]
    pub contexts_per_browser: usize,
    /// Simulated policy: `agent-sim` (half the episodes solved, the rest wandering to the
    /// step limit, so lengths vary per rollout as in a real campaign), `scripted-sim`
    /// (every episode plays its task's reference: lengths vary per task only) or
    /// `random-sim`.
    #[arg(long, default_value = "agent-sim", value_parser = ["agent-sim", "scripted-sim", "random-sim"])]
    pub policy: String,
    /// Write the figures as JSON here too.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct Row {
    concurrency: usize,
    mode: &'static str,
    episodes: i64,
    steps: i64,
    wall_s: f64,
    trajectories_per_hour: f64,
    steps_per_s: f64,
    browser_share: f64,
    policy_share: f64,
    idle_share: f64,
    success_rate: f64,
    /// Episodes finished between the 10th and 90th percentile of finish times, per hour:
    /// the rate a campaign of many more episodes would keep, without start-up and tail.
    steady_trajectories_per_hour: Option<f64>,
}

/// Runs the benchmark and prints a table.
pub async fn run(common: &Common, args: RolloutArgs) -> anyhow::Result<ExitCode> {
    let db = db::open(common).await?;
    let sites = SitesServer::start(IpAddr::V4(Ipv4Addr::LOCALHOST), None).await?;
    let model = LatencyModel {
        median: Duration::from_millis(args.latency_ms),
        sigma: args.sigma,
        batch_overhead: Duration::from_millis(20),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench rollout: policy {} (log-normal latency, median {} ms, sigma {}), bundled tasks, {cpus} CPUs",
        args.policy, args.latency_ms, args.sigma
    );
    let mut rows = Vec::new();
    for &c in &args.concurrency {
        let mut pool = crate::setup::pool_config_for(common, c, args.contexts_per_browser)?;
        pool.lease_timeout = Duration::from_secs(600);
        for mode in ["async", "lockstep"] {
            let engine = Engine::new(
                db.store.clone(),
                pool.clone(),
                RunnerConfig::for_this_process(),
                PolicyRegistry::with_simulated(model),
            );
            let report = engine.register_bundled(sites.bases()).await?;
            let tasks = report.registered.max(1);
            let rollouts = ((c as f64 * args.episodes_per_slot) / tasks as f64)
                .ceil()
                .max(1.0) as u32;
            // Warm the pool first: launches are not what is measured.
            engine.pool().await.context("launching the browser pool")?;
            let id = engine
                .create_campaign(CampaignSpec {
                    name: Some(format!("bench rollout c={c} {mode}")),
                    policy: Some(args.policy.clone()),
                    rollouts_per_task: Some(rollouts),
                    concurrency: Some(c as u32),
                    seed: Some(2026),
                    // Only the bundled sites: other suites in the database (MiniWoB++,
                    // imports) may point at servers this run does not start.
                    tasks: Some(store::TaskFilter {
                        tag: Some(engine::BUNDLED_TAG.into()),
                        ..Default::default()
                    }),
                    mode: Some(mode.into()),
                    ..Default::default()
                })
                .await?;
            let t = Instant::now();
            let status = engine.run_campaign(id).await?;
            let wall = t.elapsed().as_secs_f64();
            engine.shutdown().await;
            let v = db
                .store
                .get_campaign(id)
                .await?
                .context("campaign vanished")?;
            let (steps, observe, policy, act) = db.store.campaign_step_times(id).await?;
            let finish = db.store.finish_offsets(id).await?;
            let slot_ms = wall * 1000.0 * c as f64;
            let row = Row {
                concurrency: c,
                mode,
                episodes: v.counts.finished,
                steps,
                wall_s: wall,
                trajectories_per_hour: v.counts.finished as f64 / wall * 3600.0,
                steps_per_s: steps as f64 / wall,
                browser_share: (observe + act) as f64 / slot_ms,
                policy_share: policy as f64 / slot_ms,
                idle_share: 1.0 - (observe + act + policy) as f64 / slot_ms,
                success_rate: v.success_rate.unwrap_or(0.0),
                steady_trajectories_per_hour: steady_per_hour(&finish),
            };
            println!(
                "  c={c:<3} {mode:<8} {status:<9} {:>4} episodes {:>5} steps in {:>6.1} s: {:>7.0} traj/h {:>6.2} steps/s",
                row.episodes, row.steps, row.wall_s, row.trajectories_per_hour, row.steps_per_s
            );
            rows.push(row);
        }
    }
    println!();
    println!(
        "| concurrency | mode | episodes | wall s | traj/h | steps/s | browser | policy | idle | async/lockstep | steady traj/h | steady ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for pair in rows.chunks(2) {
        let ratio = pair[0].trajectories_per_hour / pair[1].trajectories_per_hour.max(1e-9);
        let steady = match (
            pair[0].steady_trajectories_per_hour,
            pair[1].steady_trajectories_per_hour,
        ) {
            (Some(a), Some(l)) if l > 0.0 => format!("{:.2}x", a / l),
            _ => "-".into(),
        };
        for (i, r) in pair.iter().enumerate() {
            let (ratio_cell, steady_cell) = if i == 0 {
                (format!("**{ratio:.2}x**"), steady.clone())
            } else {
                (String::new(), String::new())
            };
            let steady_rate = r
                .steady_trajectories_per_hour
                .map_or("-".into(), |s| format!("{s:.0}"));
            println!(
                "| {} | {} | {} | {:.1} | {:.0} | {:.2} | {:.0}% | {:.0}% | {:.0}% | {} | {} | {} |",
                r.concurrency,
                r.mode,
                r.episodes,
                r.wall_s,
                r.trajectories_per_hour,
                r.steps_per_s,
                r.browser_share * 100.0,
                r.policy_share * 100.0,
                r.idle_share * 100.0,
                ratio_cell,
                steady_rate,
                steady_cell
            );
        }
    }
    println!(
        "\nasync/lockstep compares whole runs (start-up and tail included); the steady ratio compares the rates between the 10th and 90th percentile of finish times, which a much longer campaign approaches (--episodes-per-slot sets the run's length)."
    );
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
        println!("\nwrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
