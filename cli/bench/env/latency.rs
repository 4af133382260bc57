//! Phase 1 of `bench env`: latency, one context at a time. BrowserGym's ten MiniWoB++ tasks
//! and the bundled reference solutions, with the raw CDP floor, a settle probe and a round
//! trip measured beside every step; a cold first reset apart.

use std::collections::BTreeMap;

use anyhow::Context;
use browser_pool::BrowserPool;
use serde::Serialize;

use super::{EnvArgs, pool_config};
use crate::args::Common;
use crate::bench::episode::{EnvTask, Probes, Samples, run_episode};
use crate::bench::procfs::{CpuShare, cpu_share, cpu_snap};
use crate::bench::stats::{Stats, stats};

#[derive(Debug, Serialize)]
pub struct LatencySummary {
    pub name: String,
    pub episodes: usize,
    pub successes: usize,
    pub action_errors: usize,
    pub failures: Vec<String>,
    pub step: Stats,
    act: Stats,
    done_check: Stats,
    observe: Stats,
    pub floor: Stats,
    floor_screenshot: Stats,
    floor_scan: Stats,
    settle_probe: Stats,
    evaluate_rtt: Stats,
    pub reset: Stats,
    reset_lease: Stats,
    reset_goto: Stats,
    reset_setup: Stats,
    reset_first_observe: Stats,
    close: Stats,
}

impl LatencySummary {
    /// The summary of one set of episodes' timings.
    fn of(name: &str, s: &Samples) -> LatencySummary {
        LatencySummary {
            name: name.to_string(),
            episodes: s.episodes,
            successes: s.successes,
            action_errors: s.action_errors,
            failures: s.failures.clone(),
            step: stats(&s.step),
            act: stats(&s.act),
            done_check: stats(&s.done),
            observe: stats(&s.observe),
            floor: stats(&s.floor),
            floor_screenshot: stats(&s.shot),
            floor_scan: stats(&s.scan),
            settle_probe: stats(&s.settle_probe),
            evaluate_rtt: stats(&s.rtt),
            reset: stats(&s.reset),
            reset_lease: stats(&s.lease),
            reset_goto: stats(&s.goto),
            reset_setup: stats(&s.setup),
            reset_first_observe: stats(&s.first_observe),
            close: stats(&s.close),
        }
    }
}

/// What the latency phase found.
pub struct Latency {
    /// One summary per set of tasks (`miniwob`, `bundled`), then `all`.
    pub summaries: Vec<LatencySummary>,
    /// The first reset in a fresh browser, which also starts its first renderer.
    pub cold_first_reset_ms: Option<f64>,
    /// Where the CPU went during the phase.
    pub cpu: Option<CpuShare>,
}

/// Runs every task's episodes one at a time on a pool of one context.
pub async fn measure(
    common: &Common,
    args: &EnvArgs,
    mw: &[EnvTask],
    bundled: &[EnvTask],
) -> anyhow::Result<Latency> {
    let mut cfg = pool_config(common, args)?;
    cfg.browsers = 1;
    cfg.contexts_per_browser = 1;
    let pool = BrowserPool::launch(cfg)
        .await
        .context("launching the pool")?;
    // The very first lease in a fresh browser also starts its first renderer: reported
    // apart, as BrowserGym reports its cold first reset.
    let mut warm = Samples::default();
    let first = mw.first().or(bundled.first()).context("no tasks")?;
    run_episode(&pool, first, args.seed, Probes::None, None, &mut warm).await?;
    let cold_first_reset_ms = warm.reset.first().copied();

    let latency_cpu0 = cpu_snap();
    let plan: Vec<(&str, &EnvTask, u64)> = (0..args.episodes)
        .flat_map(|e| {
            mw.iter()
                .enumerate()
                .map(move |(i, t)| ("miniwob", t, (e * 100 + i) as u64))
        })
        .chain(bundled.iter().map(|t| ("bundled", t, 0)))
        .collect();
    let bar = crate::progress::bar(
        plan.len() as u64,
        "latency",
        18,
        "{pos:>4}/{len:4} {msg} {elapsed_precise}",
    )?;
    let mut sets: BTreeMap<&str, Samples> = BTreeMap::new();
    for (set, t, k) in plan {
        bar.set_message(t.name().to_string());
        let out = sets.entry(set).or_default();
        if let Err(e) = run_episode(&pool, t, args.seed + k, Probes::All, None, out).await {
            bar.println(format!("  {}: {e:#}", t.name()));
            out.failures.push(format!("{}: {e:#}", t.name()));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let latency_cpu = cpu_share(latency_cpu0, cpu_snap());
    pool.shutdown().await;
    let mut latency: Vec<LatencySummary> =
        sets.iter().map(|(k, s)| LatencySummary::of(k, s)).collect();
    let mut both = Samples::default();
    for (_, s) in sets {
        both.absorb(s);
    }
    latency.push(LatencySummary::of("all", &both));

    Ok(Latency {
        summaries: latency,
        cold_first_reset_ms,
        cpu: latency_cpu,
    })
}

/// Prints one table per set of tasks, and the cold first reset.
pub fn print(latency: &Latency) {
    println!();
    for l in &latency.summaries {
        println!(
            "### {}: {} episodes ({} successful), {} steps, {} action errors, {} failures",
            l.name,
            l.episodes,
            l.successes,
            l.step.n,
            l.action_errors,
            l.failures.len()
        );
        println!("| ms | n | p50 | p90 | mean |");
        println!("|---|---|---|---|---|");
        for (label, s) in [
            ("step = act + done check + observe", &l.step),
            ("  act (incl. settle)", &l.act),
            ("  done check (MiniWoB)", &l.done_check),
            ("  observe", &l.observe),
            ("floor = screenshot + scan_elements", &l.floor),
            ("  screenshot", &l.floor_screenshot),
            ("  scan_elements", &l.floor_scan),
            ("act(wait(0)) on a settled page", &l.settle_probe),
            ("evaluate(\"0\") round trip", &l.evaluate_rtt),
            ("reset = lease → first observation", &l.reset),
            ("  lease", &l.reset_lease),
            ("  goto start page (incl. settle)", &l.reset_goto),
            ("  MiniWoB start", &l.reset_setup),
            ("  first observe", &l.reset_first_observe),
            ("close (after the episode)", &l.close),
        ] {
            if s.n > 0 {
                println!("{}", row(label, s));
            }
        }
        println!(
            "step / floor (p50): **{:.2}x**, p90: {:.2}x\n",
            l.step.p50 / l.floor.p50,
            l.step.p90 / l.floor.p90
        );
    }
    if let Some(c) = latency.cold_first_reset_ms {
        println!("cold first reset (first lease in a fresh browser): {c:.0} ms\n");
    }
}

fn row(label: &str, s: &Stats) -> String {
    format!(
        "| {label} | {} | {:.1} | {:.1} | {:.1} |",
        s.n, s.p50, s.p90, s.mean
    )
}
