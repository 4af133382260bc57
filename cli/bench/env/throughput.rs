//! Phase 2 of `bench env`: throughput. N contexts each loop episodes for a fixed time;
//! steps/s, episodes/s, latencies under load, the browsers' memory sampled while the
//! contexts are live, and where the CPU went.

use std::time::{Duration, Instant};

use anyhow::Context;
use browser_pool::{BrowserPool, Session, TreeMemory};
use serde::Serialize;

use super::{EnvArgs, pool_config};
use crate::args::Common;
use crate::bench::episode::{
    Driver, EnvTask, Probes, RANDOM_MAX_STEPS, Samples, drive, run_episode,
};
use crate::bench::procfs::{CpuShare, cpu_cell, cpu_share, cpu_snap, descendants, own_rss};
use crate::bench::stats::{Stats, stats};

/// The browsers' memory at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct MemSample {
    at_s: f64,
    leased: usize,
    pss_mb: f64,
    rss_mb: f64,
    processes: usize,
    /// Processes under each browser (one renderer per live context, roughly): shows how
    /// the pool spreads contexts over browsers.
    per_browser_processes: Vec<usize>,
}

async fn mem_sample(pool: &BrowserPool, at: Duration) -> MemSample {
    let m: TreeMemory = pool.memory().await;
    let pids = pool.browser_pids().await;
    MemSample {
        at_s: at.as_secs_f64(),
        leased: pool.stats().leased,
        pss_mb: m.pss as f64 / 1e6,
        rss_mb: m.rss as f64 / 1e6,
        processes: m.processes,
        per_browser_processes: descendants(&pids),
    }
}

/// One concurrency level's figures.
#[derive(Debug, Serialize)]
pub struct Level {
    pub contexts: usize,
    browsers: usize,
    contexts_per_browser: usize,
    window_s: f64,
    steps: usize,
    episodes: usize,
    successes: usize,
    pub steps_per_s: f64,
    episodes_per_s: f64,
    step: Stats,
    reset: Stats,
    errors: usize,
    error_samples: Vec<String>,
    baseline: MemSample,
    /// The last sample taken while the contexts ran.
    at_end: MemSample,
    peak_pss_mb: f64,
    pub pss_per_context_mb: f64,
    added_pss_per_context_mb: f64,
    own_rss_mb: f64,
    cpu: Option<CpuShare>,
}

/// One level: `n` contexts looping `tasks` for `window` on a fresh pool.
async fn throughput_level(
    common: &Common,
    args: &EnvArgs,
    tasks: &[EnvTask],
    n: usize,
    window: Duration,
) -> anyhow::Result<Level> {
    let (browsers, per_browser) = match args.browsers {
        b @ 1.. => (b.min(n.max(1)), n.div_ceil(b.min(n.max(1)))),
        0 => {
            let per = args.per_browser.max(1);
            (n.div_ceil(per).max(1), per.min(n.max(1)))
        }
    };
    let mut cfg = pool_config(common, args)?;
    cfg.browsers = browsers;
    cfg.contexts_per_browser = per_browser;
    let pool = BrowserPool::launch(cfg)
        .await
        .context("launching the pool")?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = mem_sample(&pool, Duration::ZERO).await;

    let bar = crate::progress::bar(
        window.as_millis() as u64,
        format!("throughput N={n}"),
        18,
        "{elapsed:>3} {msg}",
    )?;

    let cpu0 = cpu_snap();
    let start = Instant::now();
    let deadline = start + window;
    let mut workers = Vec::new();
    for w in 0..n {
        let pool = pool.clone();
        let tasks = tasks.to_vec();
        let seed = args.seed + 1_000_000 * (w as u64 + 1);
        let reuse = args.reuse_contexts;
        workers.push(tokio::spawn(loop_episodes(
            pool, tasks, w, n, seed, reuse, deadline,
        )));
    }
    // Sample memory while the contexts run.
    let mut samples = Vec::new();
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(left.min(Duration::from_secs(2))).await;
        let elapsed = start.elapsed();
        if elapsed < window.mul_f64(0.98) || samples.is_empty() {
            samples.push(mem_sample(&pool, elapsed).await);
        }
        bar.set_position(elapsed.as_millis().min(window.as_millis()) as u64);
        bar.set_message(format!("{} contexts leased", pool.stats().leased));
    }
    let cpu = cpu_share(cpu0, cpu_snap());
    let mut all = Samples::default();
    let mut errors = 0;
    for w in workers {
        let (out, e) = w.await?;
        errors += e;
        all.absorb(out);
    }
    bar.finish_and_clear();
    let own_rss_mb = own_rss() as f64 / 1e6;
    pool.shutdown().await;
    let at_end = samples.last().context("no memory sample")?.clone();
    let pss_per_context_mb = at_end.pss_mb / n.max(1) as f64;
    let added_pss_per_context_mb = (at_end.pss_mb - baseline.pss_mb) / n.max(1) as f64;
    let peak_pss_mb = samples.iter().map(|s| s.pss_mb).fold(0.0, f64::max);
    let secs = window.as_secs_f64();
    Ok(Level {
        contexts: n,
        browsers,
        contexts_per_browser: per_browser,
        window_s: secs,
        steps: all.step.len(),
        episodes: all.episodes,
        successes: all.successes,
        steps_per_s: all.step.len() as f64 / secs,
        episodes_per_s: all.episodes as f64 / secs,
        step: stats(&all.step),
        reset: stats(&all.reset),
        errors,
        error_samples: all.failures,
        baseline,
        at_end,
        peak_pss_mb,
        pss_per_context_mb,
        added_pss_per_context_mb,
        own_rss_mb,
        cpu,
    })
}

/// Worker `w` of `n`: episodes of every `n`th task from the `w`th on, until `deadline`;
/// its timings and how many episodes failed.
async fn loop_episodes(
    pool: BrowserPool,
    tasks: Vec<EnvTask>,
    w: usize,
    n: usize,
    seed: u64,
    reuse: bool,
    deadline: Instant,
) -> (Samples, usize) {
    let mut out = Samples::default();
    let mut i = w;
    let mut errors = 0usize;
    // With --reuse-contexts: one session for all of this worker's episodes.
    let mut kept: Option<Session> = None;
    while Instant::now() < deadline {
        let t = &tasks[i % tasks.len()];
        let result = match kept.as_mut() {
            None if reuse => match pool.lease().await {
                Ok(s) => {
                    kept = Some(s);
                    continue;
                }
                Err(e) => Err(e.into()),
            },
            Some(session) => {
                let t0 = Instant::now();
                let r = drive(
                    session,
                    t,
                    seed + i as u64,
                    Probes::None,
                    Some(deadline),
                    t0,
                    &mut out,
                )
                .await;
                if r.is_err()
                    && let Some(s) = kept.take()
                {
                    s.close().await;
                }
                r
            }
            None => {
                run_episode(
                    &pool,
                    t,
                    seed + i as u64,
                    Probes::None,
                    Some(deadline),
                    &mut out,
                )
                .await
            }
        };
        match result {
            Ok(_) => {}
            Err(e) => {
                errors += 1;
                if out.failures.len() < 5 {
                    out.failures.push(format!("{}: {e:#}", t.name()));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        i += n.max(1);
    }
    if let Some(s) = kept {
        s.close().await;
    }
    (out, errors)
}

/// Runs every `--contexts` level in turn over the MiniWoB++ tasks (the bundled ones when
/// MiniWoB++ is not installed), printing a line per level.
pub async fn measure(
    common: &Common,
    args: &EnvArgs,
    mw: &[EnvTask],
    bundled: &[EnvTask],
) -> anyhow::Result<Vec<Level>> {
    let window = Duration::from_secs_f64(args.seconds.max(1.0));
    let random_loop: Vec<EnvTask> = mw
        .iter()
        .map(|t| EnvTask {
            driver: Driver::Random,
            max_steps: RANDOM_MAX_STEPS,
            ..t.clone()
        })
        .collect();
    let loop_tasks = if mw.is_empty() {
        bundled
    } else if args.loop_policy == "random" {
        &random_loop
    } else {
        mw
    };
    println!(
        "throughput: {} policy over {} tasks, {:.0} s per level{}",
        args.loop_policy,
        loop_tasks.len(),
        window.as_secs_f64(),
        if args.reuse_contexts {
            ", one context per worker reused across episodes (--reuse-contexts: not isolated)"
        } else {
            ", a fresh context per episode"
        }
    );
    let mut levels = Vec::new();
    for &n in &args.contexts {
        let level = throughput_level(common, args, loop_tasks, n.max(1), window).await?;
        println!(
            "  N={:<3} {} browser(s) x {} contexts: {:>6.2} steps/s {:>5.2} episodes/s, step p50 {:.0} ms, reset p50 {:.0} ms, PSS {:.0} MB ({:.0} MB/context), {} errors",
            level.contexts,
            level.browsers,
            level.contexts_per_browser,
            level.steps_per_s,
            level.episodes_per_s,
            level.step.p50,
            level.reset.p50,
            level.at_end.pss_mb,
            level.pss_per_context_mb,
            level.errors
        );
        for e in &level.error_samples {
            println!("      {e}");
        }
        levels.push(level);
    }
    Ok(levels)
}

/// Prints the levels' table.
pub fn print(levels: &[Level]) {
    println!();
    println!(
        "| contexts | browsers | steps/s | episodes/s | steps/episode | success | step p50 / p90 ms | reset p50 / p90 ms | CPU | empty pool PSS MB | PSS MB (live) | peak PSS MB | MB / context | added MB / context | processes per browser | errors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for l in levels {
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.1} | {}/{} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {:.0} | {:.0} ({} leased) | {:.0} | {:.0} | {:.0} | {:?} | {} |",
            l.contexts,
            l.browsers,
            l.steps_per_s,
            l.episodes_per_s,
            l.steps as f64 / l.episodes.max(1) as f64,
            l.successes,
            l.episodes,
            l.step.p50,
            l.step.p90,
            l.reset.p50,
            l.reset.p90,
            cpu_cell(&l.cpu),
            l.baseline.pss_mb,
            l.at_end.pss_mb,
            l.at_end.leased,
            l.peak_pss_mb,
            l.pss_per_context_mb,
            l.added_pss_per_context_mb,
            l.at_end.per_browser_processes,
            l.errors
        );
    }
    if let Some(l) = levels.first() {
        println!("(surfgym's own RSS: {:.0} MB)", l.own_rss_mb);
    }
}
