//! `surfgym bench workers`: one campaign pulled by 1, 2, 3… `surfgym worker` processes
//! sharing one Postgres, each with its own browser and the same per-worker concurrency;
//! prints trajectories/hour and the speedup over one worker (near-linear until the
//! machine's CPUs are saturated).

use std::net::{IpAddr, Ipv4Addr};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use engine::RunnerConfig;
use engine::SitesServer;
use engine::{CampaignSpec, Engine};
use policy::{LatencyModel, PolicyRegistry};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::stats::steady_per_hour;
use crate::args::Common;
use crate::db;

/// Options of the worker-scaling benchmark.
#[derive(Args)]
pub struct WorkersArgs {
    /// Worker process counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub workers: Vec<usize>,
    /// Concurrent episodes per worker (browser contexts of its one browser).
    #[arg(long, default_value_t = 4)]
    pub per_worker: usize,
    /// Episodes per level, as a multiple of the total concurrency.
    #[arg(long, default_value_t = 4.0)]
    pub episodes_per_slot: f64,
    /// Simulated policy: `agent-sim`, `scripted-sim` or `random-sim`.
    #[arg(long, default_value = "agent-sim", value_parser = ["agent-sim", "scripted-sim", "random-sim"])]
    pub policy: String,
}

/// A worker process, stopped with SIGTERM (its browser closes with it) when dropped.
struct Worker(Child);

impl Worker {
    async fn spawn(common: &Common, url: &str, per_worker: usize) -> anyhow::Result<Worker> {
        let exe = std::env::current_exe().context("finding the surfgym binary")?;
        let mut child = Command::new(exe)
            .arg("worker")
            // In the environment, not the command line, which every local user can read
            // (the private cluster's URL carries its password).
            .env("DATABASE_URL", url)
            .arg("--data-dir")
            .arg(&common.data_dir)
            .arg("--chromium")
            .arg(&common.chromium)
            .args(["--browsers", "1", "--contexts", &per_worker.to_string()])
            .args(["--sim-latency-ms", &common.sim_latency_ms.to_string()])
            .args(["--sim-sigma", &common.sim_sigma.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting a worker")?;
        let out = child.stdout.take().context("worker stdout")?;
        let mut lines = BufReader::new(out).lines();
        let ready = async {
            while let Some(line) = lines.next_line().await? {
                if line.starts_with("worker running") {
                    return Ok(());
                }
            }
            anyhow::bail!("the worker exited before it was ready")
        };
        tokio::time::timeout(Duration::from_secs(60), ready)
            .await
            .context("the worker did not start within 60 s")??;
        Ok(Worker(child))
    }

    /// SIGTERM, so the worker closes its browser; SIGKILL if it does not exit.
    async fn stop(mut self) {
        if let Some(pid) = self.0.id() {
            // A positive pid names exactly this process.
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
        if tokio::time::timeout(Duration::from_secs(20), self.0.wait())
            .await
            .is_err()
        {
            let _ = self.0.kill().await;
        }
    }
}

/// Runs the benchmark and prints a table.
pub async fn run(common: &Common, args: WorkersArgs) -> anyhow::Result<ExitCode> {
    let db = db::open(common).await?;
    let sites = SitesServer::start(IpAddr::V4(Ipv4Addr::LOCALHOST), None).await?;
    let model = LatencyModel {
        median: Duration::from_millis(common.sim_latency_ms),
        sigma: common.sim_sigma,
        batch_overhead: Duration::from_millis(20),
    };
    // Registers the bundled tasks at this process's sites and creates campaigns; the
    // workers run them.
    let engine = Engine::new(
        db.store.clone(),
        crate::setup::pool_config_for(common, 1, 1)?,
        RunnerConfig::for_this_process(),
        PolicyRegistry::with_simulated(model),
    );
    let report = engine.register_bundled(sites.bases()).await?;
    let tasks = report.registered.max(1);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench workers: policy {} (median {} ms, sigma {}), {} episodes per worker, {cpus} CPUs",
        args.policy, common.sim_latency_ms, common.sim_sigma, args.per_worker
    );
    let mut rows: Vec<(usize, usize, f64, f64)> = Vec::new();
    for &n in &args.workers {
        let mut workers = Vec::new();
        for _ in 0..n.max(1) {
            workers.push(Worker::spawn(common, &db.url, args.per_worker).await?);
        }
        let slots = n.max(1) * args.per_worker;
        let rollouts = ((slots as f64 * args.episodes_per_slot) / tasks as f64)
            .ceil()
            .max(1.0) as u32;
        let id = engine
            .create_campaign(CampaignSpec {
                name: Some(format!("bench workers n={n}")),
                policy: Some(args.policy.clone()),
                rollouts_per_task: Some(rollouts),
                concurrency: Some(args.per_worker as u32),
                seed: Some(2026),
                // Only the bundled sites: other suites in the database (MiniWoB++, imports)
                // may point at servers this run does not start.
                tasks: Some(store::TaskFilter {
                    tag: Some(engine::BUNDLED_TAG.into()),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await?;
        let t = Instant::now();
        let done = loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let v = db
                .store
                .get_campaign(id)
                .await?
                .context("campaign vanished")?;
            if v.status.is_ended() {
                break v;
            }
            if t.elapsed() > Duration::from_secs(3600) {
                anyhow::bail!("campaign {id} did not finish within an hour");
            }
        };
        for w in workers {
            w.stop().await;
        }
        let finish = db.store.finish_offsets(id).await?;
        let rate = steady_per_hour(&finish).unwrap_or(0.0);
        println!(
            "  {n} worker(s): {} episodes ({} failed) in {:.1} s, steady {:.0} traj/h",
            done.counts.finished,
            done.counts.failed,
            t.elapsed().as_secs_f64(),
            rate
        );
        rows.push((
            n,
            done.counts.finished as usize,
            t.elapsed().as_secs_f64(),
            rate,
        ));
    }
    engine.shutdown().await;
    let base = rows.first().map_or(0.0, |r| r.3 / r.0.max(1) as f64);
    println!();
    println!(
        "| workers | concurrent episodes | episodes | wall s | steady traj/h | speedup | per-worker efficiency |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (n, eps, wall, rate) in &rows {
        let speedup = if base > 0.0 { rate / base } else { 0.0 };
        println!(
            "| {n} | {} | {eps} | {wall:.1} | {rate:.0} | {speedup:.2}x | {:.0}% |",
            n * args.per_worker,
            speedup / *n.max(&1) as f64 * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}
