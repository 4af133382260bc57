//! `surfgym bench traffic`: what recording a site's traffic costs, and what replaying it
//! saves, on the bundled practice sites, in one run: each bundled task's reference
//! solution is played, in turn, live with the gate off (no capture), live through the
//! capturing gate while recording, and replayed from that recording. Step time (act and
//! observe) of each, as ratios to live; exchanges and bytes recorded per episode, and how
//! much of it content addressing stores once (bodies repeated across episodes); requests
//! a replay could not answer.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use browser_pool::{BrowserPool, Exchange, Recording, Session, Unmatched};
use clap::Args;
use serde::Serialize;

use super::bench_pool;
use super::episode::{EnvTask, Probes, Samples, bundled_tasks, drive, practice_sites};
use super::stats::{Stats, stats};
use crate::args::Common;

/// Options of the traffic benchmark.
#[derive(Args)]
pub struct TrafficArgs {
    /// Rounds over the tasks (each task played once per mode per round).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Bundled tasks to play.
    #[arg(long, default_value_t = 8)]
    pub tasks: usize,
    /// Write every figure as JSON here too.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

#[derive(Debug, Serialize)]
struct Mode {
    step: Stats,
    reset: Stats,
    episodes: usize,
    failures: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    cpus: usize,
    live: Mode,
    record: Mode,
    replay: Mode,
    record_step_ratio: f64,
    replay_step_ratio: f64,
    record_reset_ratio: f64,
    replay_reset_ratio: f64,
    exchanges_per_episode: f64,
    kb_per_episode: f64,
    kb_stored_per_episode: f64,
    unmatched_per_replay: f64,
}

/// Plays `t` on a fresh session of `pool`, after `prepare` set its traffic mode; the
/// session's recorded exchanges and unmatched requests.
async fn play(
    pool: &BrowserPool,
    t: &EnvTask,
    out: &mut Samples,
    prepare: impl FnOnce(&Session) -> anyhow::Result<()>,
) -> anyhow::Result<(Vec<Exchange>, u64)> {
    let t0 = Instant::now();
    let mut session = pool.lease().await.context("lease")?;
    prepare(&session)?;
    let result = drive(&mut session, t, 0, Probes::None, None, t0, out).await;
    let exchanges = session.take_traffic();
    let unmatched = session.unmatched_requests();
    session.close().await;
    result?;
    Ok((exchanges, unmatched))
}

fn mode(s: &Samples) -> Mode {
    Mode {
        step: stats(&s.step),
        reset: stats(&s.reset),
        episodes: s.episodes,
        failures: s.failures.len(),
    }
}

/// Runs the benchmark and prints its figures.
pub async fn run(common: &Common, a: TrafficArgs) -> anyhow::Result<ExitCode> {
    if a.rounds == 0 || a.tasks == 0 {
        bail!("--rounds and --tasks: must be at least 1");
    }
    let sites = practice_sites(common).await?;
    let tasks = bundled_tasks(sites.bases(), Some(a.tasks));
    let mut cfg = bench_pool(common)?;
    cfg.browsers = 1;
    let live_pool = BrowserPool::launch(cfg.clone()).await?;
    cfg.capture_traffic = true;
    let capture_pool = BrowserPool::launch(cfg).await?;

    let (mut live, mut record, mut replay) =
        (Samples::default(), Samples::default(), Samples::default());
    let (mut exchanges, mut bytes, mut unmatched) = (0usize, 0usize, 0u64);
    let mut stored: BTreeMap<String, usize> = BTreeMap::new();
    for round in 0..a.rounds {
        for t in &tasks {
            play(&live_pool, t, &mut live, |_| Ok(())).await?;
            let (recorded, _) =
                play(&capture_pool, t, &mut record, |s| Ok(s.record_traffic()?)).await?;
            exchanges += recorded.len();
            for e in &recorded {
                bytes += e.body.len();
                stored.insert(store::blob_hash(&e.body), e.body.len());
            }
            let recording = Arc::new(Recording::new(recorded));
            let (_, missed) = play(&capture_pool, t, &mut replay, |s| {
                Ok(s.replay_traffic(recording, Unmatched::Fail)?)
            })
            .await?;
            unmatched += missed;
        }
        eprintln!("round {} of {} done", round + 1, a.rounds);
    }
    live_pool.shutdown().await;
    capture_pool.shutdown().await;

    let episodes = record.episodes.max(1) as f64;
    let (live, record, replay) = (mode(&live), mode(&record), mode(&replay));
    let report = Report {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        record_step_ratio: record.step.p50 / live.step.p50,
        replay_step_ratio: replay.step.p50 / live.step.p50,
        record_reset_ratio: record.reset.p50 / live.reset.p50,
        replay_reset_ratio: replay.reset.p50 / live.reset.p50,
        exchanges_per_episode: exchanges as f64 / episodes,
        kb_per_episode: bytes as f64 / 1024.0 / episodes,
        kb_stored_per_episode: stored.values().sum::<usize>() as f64 / 1024.0 / episodes,
        unmatched_per_replay: unmatched as f64 / replay.episodes.max(1) as f64,
        live,
        record,
        replay,
    };
    println!("mode     episodes  step p50 ms  step p90 ms  reset p50 ms  failures");
    for (name, m) in [
        ("live", &report.live),
        ("record", &report.record),
        ("replay", &report.replay),
    ] {
        println!(
            "{name:<8} {:>8}  {:>11.1}  {:>11.1}  {:>12.1}  {:>8}",
            m.episodes, m.step.p50, m.step.p90, m.reset.p50, m.failures
        );
    }
    println!(
        "step p50 against live: record {:.2}x, replay {:.2}x; reset p50: record {:.2}x, replay {:.2}x",
        report.record_step_ratio,
        report.replay_step_ratio,
        report.record_reset_ratio,
        report.replay_reset_ratio
    );
    println!(
        "recorded per episode: {:.1} exchanges, {:.1} KB of bodies, {:.1} KB stored once content-addressed ({} episodes); unmatched per replay: {:.2}",
        report.exchanges_per_episode,
        report.kb_per_episode,
        report.kb_stored_per_episode,
        report.record.episodes,
        report.unmatched_per_replay
    );
    if let Some(path) = &a.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
